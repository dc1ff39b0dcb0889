// PlayHouse.Sim summary page (swarm, zoo run, campaign): outcomes per scenario, each failure with its replay command
// and a link to its timeline, and latency distributions drawn as HdrHistogram percentile plots (value against
// 1/(1-p) on a log axis).
"use strict";
(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const COLOURS = ["#2f7ed8", "#e4572e", "#17a589", "#8e44ad", "#f39c12", "#34495e", "#c0392b", "#16a085", "#7f8c8d", "#d35400"];
  const esc = text => String(text).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const pair = p => [p.key !== undefined ? p.key : p.Key, p.value !== undefined ? p.value : p.Value];

  function section(id, title, html) {
    const node = document.createElement("section");
    node.id = id;
    node.innerHTML = `<h2>${esc(title)}</h2>` + html;
    document.body.appendChild(node);
  }

  function outcomes(data) {
    const kinds = [...new Set(data.outcomes.flatMap(o => o.failed.map(f => pair(f)[0])))].sort();
    const head = "<tr><th>scenario</th><th>runs</th><th>passed</th>" + kinds.map(k => `<th>${esc(k)}</th>`).join("") + "</tr>";
    const rows = data.outcomes.map(o => {
      const failed = Object.fromEntries(o.failed.map(pair));
      return `<tr data-scenario="${esc(o.scenario)}"><td>${esc(o.scenario)}</td><td class="num">${o.runs}</td>` +
        `<td class="num ${o.passed === o.runs ? "outcome-pass" : ""}">${o.passed}</td>` +
        kinds.map(k => `<td class="num ${failed[k] ? "outcome-fail" : ""}">${failed[k] || 0}</td>`).join("") + "</tr>";
    }).join("");
    const runs = data.outcomes.reduce((n, o) => n + o.runs, 0), passed = data.outcomes.reduce((n, o) => n + o.passed, 0);
    section("outcomes", `Outcomes: ${passed} of ${runs} passed`, `<table class="table" id="outcome-table">${head}${rows}</table>`);
  }

  function failures(data) {
    if (data.failures.length === 0) {
      section("failures", "Failures (0)", "<p>None.</p>");
      return;
    }
    const rows = data.failures.map((f, i) =>
      `<tr class="failure" id="failure-${i}"><td>${esc(f.name)}</td><td>${esc(f.scenario)}</td><td class="outcome-fail">${esc(f.outcome)}</td>` +
      `<td>${esc(f.failure)}</td><td><code class="replay">${esc(f.replayCommand)}</code></td>` +
      `<td>${f.timelineLink ? `<a class="timeline-link" href="${esc(f.timelineLink)}">timeline</a>`
        : f.timelineCommand ? `<code class="timeline-command">${esc(f.timelineCommand)}</code>` : "&ndash;"}</td></tr>`).join("");
    section("failures", `Failures (${data.failures.length})`,
      `<table class="table" id="failure-table"><tr><th>run</th><th>scenario</th><th>outcome</th><th>first failure</th><th>replay</th><th>timeline</th></tr>${rows}</table>`);
  }

  // x = log10(1/(1-p)) so 90%, 99%, 99.9% ... are equally spaced; y = latency in ms, linear from 0.
  function latencies(data) {
    const series = data.latencies.filter(s => s.points.length > 0);
    if (series.length === 0) {
      section("latency", "Latency distributions", "<p>No round trips were measured.</p>");
      return;
    }
    const W = 760, H = 320, L = 60, R = 40, T = 14, B = 40;
    const nines = p => Math.log10(1 / Math.max(1e-7, 1 - p / 100));
    const xMax = Math.max(1, Math.min(6, Math.ceil(Math.max(...series.flatMap(s => s.points.map(p => nines(Math.min(p.percentile, 99.9999))))))));
    const yMax = Math.max(...series.map(s => Math.max(s.maxMs, ...s.points.map(p => p.valueMs)))) * 1.05 || 1;
    const x = p => L + nines(Math.min(p, 99.9999)) / xMax * (W - L - R);
    const y = ms => H - B - ms / yMax * (H - T - B);
    let svg = `<svg xmlns="${SVG_NS}" width="${W}" height="${H}" id="latency-chart"><g class="grid">`;
    for (let k = 0; k <= xMax; k++) {
      const px = L + k / xMax * (W - L - R);
      const label = k === 0 ? "0%" : (100 - 100 / Math.pow(10, k)).toFixed(Math.max(0, k - 2)) + "%";
      svg += `<line x1="${px}" y1="${T}" x2="${px}" y2="${H - B}"></line><text x="${px - 12}" y="${H - B + 14}">${label}</text>`;
    }
    for (let k = 0; k <= 5; k++) {
      const ms = yMax * k / 5, py = y(ms);
      svg += `<line x1="${L}" y1="${py}" x2="${W - R}" y2="${py}"></line><text x="4" y="${py + 3}">${ms.toFixed(ms < 10 ? 2 : 0)} ms</text>`;
    }
    svg += `<text x="${L}" y="${H - 6}">percentile (log scale of 1/(1-p)), HdrHistogram percentile iteration</text></g>`;
    series.forEach((s, i) => {
      const d = s.points.map((p, j) => `${j === 0 ? "M" : "L"}${x(p.percentile).toFixed(1)},${y(p.valueMs).toFixed(1)}`).join(" ");
      svg += `<path class="latency-curve" data-series="${esc(s.name)}" d="${d}" stroke="${COLOURS[i % COLOURS.length]}"><title>${esc(s.name)}</title></path>`;
    });
    svg += "</svg>";
    const table = "<table class=\"table\" id=\"latency-table\"><tr><th></th><th>series</th><th>samples</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>" +
      series.map((s, i) => {
        const at = q => { const p = s.points.find(pt => pt.percentile >= q); return p ? p.valueMs.toFixed(3) : "&ndash;"; };
        return `<tr><td><svg width="14" height="4"><rect width="14" height="4" fill="${COLOURS[i % COLOURS.length]}"></rect></svg></td><td>${esc(s.name)}</td>` +
          `<td class="num">${s.count}</td><td class="num">${at(50)}</td><td class="num">${at(99)}</td><td class="num">${at(99.9)}</td><td class="num">${s.maxMs.toFixed(3)}</td></tr>`;
      }).join("") + "</table>";
    section("latency", "Latency distributions (round trips, ms)", `<div class="chart-box">${svg}</div>${table}`);
  }

  window.playHousePageData().then(data => {
    document.title = data.title;
    const head = document.createElement("header");
    head.innerHTML = `<h1>${esc(data.title)}</h1><div class="meta" id="notes">` +
      data.notes.map(p => { const [k, v] = pair(p); return `<span>${esc(k)}: <code>${esc(v)}</code></span>`; }).join("") + "</div>";
    document.body.appendChild(head);
    outcomes(data);
    failures(data);
    latencies(data);
    document.body.dataset.ready = "true";
  }).catch(error => {
    const p = document.createElement("p");
    p.id = "page-error";
    p.textContent = "This page could not be drawn: " + (error && error.message || error);
    document.body.appendChild(p);
    document.body.dataset.ready = "error";
    console.error(error);
  });
})();
