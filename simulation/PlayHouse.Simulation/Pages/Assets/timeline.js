// PlayHouse.Sim timeline page. Reads the columnar data in #page-data (docs/timeline.md describes it) and draws lanes,
// events, arrows from send to delivery, fault windows and violations. Zoomed out it draws per-pixel counts on a canvas
// (bounded work for any trace size); once the window holds few enough items it draws each one as SVG.
"use strict";
(function () {
  const TICKS_PER_MS = 10000;
  const ROW_H = 22, AXIS_H = 26, LABEL_W = 180;
  const DETAIL_MAX = 4000; // items drawn one by one at most; more than that are counted per pixel column
  const KIND_NAMES = ["Client", "Path", "Server", "Stage", "Other"];
  const SVG_NS = "http://www.w3.org/2000/svg";
  const stats = { started: performance.now() };
  window.timelineStats = stats;

  function esc(text) {
    return String(text).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  }
  const cls = text => String(text).replace(/[^A-Za-z0-9_-]/g, "-");
  const fmtMs = ticks => {
    const ms = ticks / TICKS_PER_MS, abs = Math.abs(ms);
    return (abs === 0 ? "0" : abs >= 100 ? ms.toFixed(1) : abs >= 1 ? ms.toFixed(3) : ms.toFixed(4)) + " ms";
  };

  // Columns of times stored as differences from the previous item become absolute times.
  function prefix(deltas) {
    const out = new Float64Array(deltas.length);
    let t = 0;
    for (let i = 0; i < deltas.length; i++) { t += deltas[i]; out[i] = t; }
    return out;
  }
  const int32 = values => Int32Array.from(values);
  const float64 = values => Float64Array.from(values);

  function lowerBound(array, value, count) {
    let lo = 0, hi = count;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (array[mid] < value) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function decode(data) {
    const S = data.strings;
    const lanes = data.lanes.map((l, i) => ({ i, id: S[l[0]], label: S[l[1]], kind: l[2], parent: l[3] }));
    const fieldSets = data.fieldSets.map(set => {
      const pairs = [];
      for (let i = 0; i < set.length; i += 2) pairs.push([S[set[i]], S[set[i + 1]]]);
      return pairs;
    });
    const e = data.events, m = data.messages;
    const events = {
      n: e.t.length, t: prefix(e.t), d: float64(e.d), lane: int32(e.l), kind: int32(e.k), label: int32(e.n), fields: int32(e.f),
    };
    const messages = {
      n: m.t.length, t: prefix(m.t), lat: float64(m.lat), a: int32(m.a), b: int32(m.b), kind: int32(m.k), bytes: int32(m.bytes),
      lost: int32(m.lost), id: int32(m.id), seq: float64(m.seq), st: float64(m.st), err: int32(m.err), fr: int32(m.fr), fields: int32(m.f),
    };
    // The latest end of any message sent before each one: a window's messages start at most this far back.
    messages.end = new Float64Array(messages.n);
    for (let i = 0; i < messages.n; i++) {
      const lat = messages.lat[i];
      messages.end[i] = messages.t[i] + (lat >= 0 ? lat : -1 - lat);
    }
    let longest = 0;
    for (let i = 0; i < messages.n; i++) longest = Math.max(longest, messages.end[i] - messages.t[i]);
    messages.longest = longest;
    let endTicks = 0;
    for (let i = 0; i < events.n; i++) endTicks = Math.max(endTicks, events.t[i] + events.d[i]);
    for (let i = 0; i < messages.n; i++) endTicks = Math.max(endTicks, messages.end[i]);
    for (const f of data.faults) endTicks = Math.max(endTicks, f.e);
    for (const v of data.violations) endTicks = Math.max(endTicks, v.t);
    return { meta: data.meta, S, lanes, fieldSets, events, messages, faults: data.faults, violations: data.violations, endTicks: Math.max(endTicks, 1) };
  }

  function el(tag, attrs, html) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (html !== undefined) node.innerHTML = html;
    return node;
  }

  function buildShell(T) {
    const meta = T.meta;
    document.title = meta.title;
    const head = el("header", { id: "head" });
    head.appendChild(el("h1", {}, esc(meta.title)));
    const line = el("div", { class: "meta" });
    line.innerHTML =
      `<span>trace hash <code id="trace-hash">${esc(meta.traceHash || "none")}</code></span>` +
      (meta.seed ? `<span>seed <code id="seed">${esc(meta.seed)}</code></span>` : "") +
      `<span>clock ${esc(meta.clock)}</span>` +
      `<span>${T.lanes.length} lanes, ${T.events.n} events, ${T.messages.n} messages, ${T.faults.length} faults, ${T.violations.length} violations</span>`;
    head.appendChild(line);
    const notes = el("div", { class: "meta", id: "notes" });
    for (const [k, v] of meta.notes) notes.appendChild(el("span", { class: "note-" + cls(k) }, `${esc(k)}: <code>${esc(v)}</code>`));
    if (meta.replay) notes.appendChild(el("span", {}, `replay: <code class="replay" id="replay">${esc(meta.replay)}</code>`));
    head.appendChild(notes);
    head.appendChild(el("div", { id: "first-violation" }));
    document.body.appendChild(head);

    const controls = el("div", { class: "controls", id: "controls" });
    controls.innerHTML =
      `<span><label for="window-from">window (ms)</label> <input type="number" id="window-from" step="any"> to <input type="number" id="window-to" step="any"></span>` +
      `<span><button id="zoom-in" title="zoom in">+</button> <button id="zoom-out" title="zoom out">&minus;</button> <button id="zoom-reset">whole run</button></span>` +
      `<span><label for="filter-request">request #</label> <input type="text" id="filter-request" placeholder="msg seq"></span>` +
      `<span><label for="filter-actor">actor</label> <input type="text" id="filter-actor" placeholder="client-3, account"></span>` +
      `<span><label for="filter-stage">stage</label> <input type="text" id="filter-stage" placeholder="1 or play-1/1"></span>` +
      `<span id="lane-kinds">${KIND_NAMES.map((n, k) => `<label><input type="checkbox" data-kind="${k}" checked> ${n === "Path" ? "paths" : n.toLowerCase() + "s"}</label>`).join(" ")}</span>` +
      `<span id="status"></span>`;
    document.body.appendChild(controls);

    const main = el("div", { class: "main" });
    const scroll = el("div", { id: "chart-scroll" });
    const spacer = el("div", { id: "chart-spacer" });
    const sticky = el("div", { id: "chart-sticky" });
    const canvas = el("canvas", { id: "density" });
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("id", "chart");
    sticky.appendChild(canvas);
    sticky.appendChild(svg);
    spacer.appendChild(sticky);
    scroll.appendChild(spacer);
    main.appendChild(scroll);
    main.appendChild(el("aside", { id: "details" }, "<em>Click an event, an arrow or a fault to see its fields.</em>"));
    document.body.appendChild(main);
    document.body.appendChild(el("div", { class: "legend", id: "legend" },
      ["turn", "timer", "tick", "lifecycle", "request", "drop", "network", "stall", "reset", "fault"].map(k =>
        `<span><svg width="10" height="10"><circle class="ev k-${k}" cx="5" cy="5" r="4"></circle></svg> ${k}</span>`).join("") +
      ["partition", "loss", "crash", "reset", "stall"].map(k =>
        `<span><svg width="14" height="10"><rect class="fault fault-${k}" width="14" height="10" style="opacity:.5"></rect></svg> ${k} window</span>`).join("")));
    const list = el("section", { id: "violations" });
    list.innerHTML = `<h2>Violations (${T.violations.length})</h2>` + (T.violations.length === 0 ? "<p>None: every checker passed.</p>" :
      "<ol>" + T.violations.map((v, i) =>
        `<li id="violation-${i}" class="${i === 0 ? "first" : ""}"><a href="#" data-violation="${i}">${esc(fmtMs(v.t))}</a> <b class="checker">[${esc(v.checker)}]</b> ${esc(v.msg)}</li>`).join("") + "</ol>");
    document.body.appendChild(list);
    return { scroll, spacer, sticky, canvas, svg };
  }

  function start(T) {
    const ui = buildShell(T);
    const state = { from: 0, to: T.endTicks, hiddenKinds: new Set(), selected: null, filter: { request: "", actor: "", stage: "" } };
    const evMask = new Uint8Array(T.events.n).fill(1);
    const msgMask = new Uint8Array(T.messages.n).fill(1);
    let rows = [], rowOf = new Int32Array(T.lanes.length).fill(-1), filtering = false;
    const children = T.lanes.map(() => []);
    T.lanes.forEach(l => { if (l.parent >= 0) children[l.parent].push(l.i); });

    const first = T.violations.length > 0 ? T.violations[0] : null;
    if (first) {
      document.getElementById("first-violation").innerHTML =
        `First violation at <a href="#violation-0" id="first-violation-link">${esc(fmtMs(first.t))}</a>: [${esc(first.checker)}] ${esc(first.msg)}`;
    }

    function fieldValue(setIndex, key) {
      if (setIndex < 0) return null;
      for (const [k, v] of T.fieldSets[setIndex]) if (k === key) return v;
      return null;
    }

    // Which lanes a filter term names.
    function actorLanes(term) {
      const set = new Set();
      for (const l of T.lanes) if (l.kind === 0 && (l.id === term || l.id === "client-" + term || l.label === term)) set.add(l.i);
      // A client's connections are lanes under it (a campaign's); parents come before their children.
      for (const l of T.lanes) if (l.parent >= 0 && set.has(l.parent)) set.add(l.i);
      return set;
    }
    function stageLanes(term) {
      const set = new Set();
      for (const l of T.lanes) if (l.kind === 3 && (l.id === term || l.id.endsWith("/" + term))) set.add(l.i);
      return set;
    }

    function applyFilter() {
      const f = state.filter;
      const request = f.request.trim(), actor = f.actor.trim(), stage = f.stage.trim();
      filtering = request !== "" || actor !== "" || stage !== "";
      const aLanes = actor ? actorLanes(actor) : null, sLanes = stage ? stageLanes(stage) : null;
      const stageNumber = stage && /^\d+$/.test(stage) ? Number(stage) : stage.includes("/") ? Number(stage.split("/").pop()) : NaN;
      const requestNumber = request ? Number(request.replace(/^#/, "")) : NaN;
      const used = new Uint8Array(T.lanes.length);
      const E = T.events, M = T.messages;
      for (let i = 0; i < E.n; i++) {
        let ok = true;
        const lane = E.lane[i], fs = E.fields[i];
        if (request) ok = String(fieldValue(fs, "seq")) === String(requestNumber) && T.S[E.kind[i]] === "request";
        if (ok && actor) ok = aLanes.has(lane) || fieldValue(fs, "actor") === actor || fieldValue(fs, "account") === actor;
        if (ok && stage) ok = sLanes.has(lane) || (T.lanes[lane].kind !== 3 && fieldValue(fs, "stage") === String(stageNumber));
        evMask[i] = ok ? 1 : 0;
        if (ok && filtering) used[lane] = 1;
      }
      for (let i = 0; i < M.n; i++) {
        let ok = true;
        const a = M.a[i], b = M.b[i];
        if (request) ok = M.seq[i] === requestNumber;
        if (ok && actor) ok = aLanes.has(a) || aLanes.has(b);
        if (ok && stage) ok = sLanes.has(a) || sLanes.has(b) || M.st[i] === stageNumber;
        msgMask[i] = ok ? 1 : 0;
        if (ok && filtering) { used[a] = 1; used[b] = 1; }
      }
      if (filtering) {
        if (aLanes) aLanes.forEach(l => used[l] = 1);
        if (sLanes) sLanes.forEach(l => used[l] = 1);
      }
      layoutRows(used);
    }

    function layoutRows(used) {
      rows = [];
      rowOf.fill(-1);
      for (const l of T.lanes) {
        if (state.hiddenKinds.has(l.kind)) continue;
        if (filtering && !used[l.i]) continue;
        rowOf[l.i] = rows.length;
        rows.push(l.i);
      }
      const total = AXIS_H + rows.length * ROW_H + 4;
      ui.spacer.style.height = total + "px";
      // As tall as the lanes need, up to most of the window (then the lanes scroll).
      ui.scroll.style.height = Math.max(160, Math.min(total + 2, Math.floor(window.innerHeight * 0.7))) + "px";
    }

    const view = () => {
      const width = Math.max(200, ui.scroll.clientWidth);
      const height = Math.max(100, ui.scroll.clientHeight);
      return { width, height, plotW: width - LABEL_W - 8, top: ui.scroll.scrollTop };
    };
    const xOf = (t, v) => LABEL_W + (t - state.from) / (state.to - state.from) * v.plotW;
    const tOf = (x, v) => state.from + (x - LABEL_W) / v.plotW * (state.to - state.from);
    const yOf = (row, v) => AXIS_H + row * ROW_H - v.top;

    function axis(v) {
      const span = (state.to - state.from) / TICKS_PER_MS;
      const raw = span / Math.max(2, v.plotW / 110);
      const pow = Math.pow(10, Math.floor(Math.log10(raw)));
      const step = [1, 2, 5, 10].map(s => s * pow).find(s => s >= raw) * TICKS_PER_MS;
      let out = `<g class="axis"><rect x="0" y="0" width="${v.width}" height="${AXIS_H}" fill="#fff"></rect>`;
      for (let t = Math.ceil(state.from / step) * step; t <= state.to; t += step) {
        const x = xOf(t, v);
        out += `<line x1="${x}" y1="${AXIS_H - 6}" x2="${x}" y2="${v.height}"></line><text x="${x + 2}" y="${AXIS_H - 9}">${esc(fmtMs(t))}</text>`;
      }
      return out + "</g>";
    }

    function visibleRows(v) {
      const firstRow = Math.max(0, Math.floor((v.top - 0) / ROW_H) - 1);
      const lastRow = Math.min(rows.length - 1, Math.ceil((v.top + v.height) / ROW_H));
      return [firstRow, lastRow];
    }

    function render() {
      const v = view();
      ui.sticky.style.height = v.height + "px";
      ui.svg.setAttribute("width", v.width);
      ui.svg.setAttribute("height", v.height);
      ui.canvas.width = v.width;
      ui.canvas.height = v.height;
      const ctx = ui.canvas.getContext("2d");
      ctx.clearRect(0, 0, v.width, v.height);
      const [r0, r1] = visibleRows(v);
      const rowShown = row => row >= r0 && row <= r1;
      const E = T.events, M = T.messages;

      // Items in the window on rows that are shown (filtered and scrolled into view).
      const e0 = lowerBound(E.t, state.from, E.n), e1 = lowerBound(E.t, state.to + 1, E.n);
      const m0 = lowerBound(M.t, state.from - M.longest, M.n), m1 = lowerBound(M.t, state.to + 1, M.n);
      // Exact counts decide between drawing and counting; a window with far more items than could ever be drawn
      // skips that pass (the per-pixel counts below are its only pass over the items).
      let eventCount = e1 - e0, messageCount = m1 - m0;
      const surely = eventCount + messageCount > 25 * DETAIL_MAX;
      if (!surely) {
        eventCount = 0;
        messageCount = 0;
        for (let i = e0; i < e1; i++) { const r = rowOf[E.lane[i]]; if (evMask[i] && r >= 0 && rowShown(r)) eventCount++; }
        for (let i = m0; i < m1; i++) {
          if (!msgMask[i] || M.end[i] < state.from) continue;
          const ra = rowOf[M.a[i]], rb = rowOf[M.b[i]];
          if (ra >= 0 && rb >= 0 && (rowShown(ra) || rowShown(rb) || (ra < r0) !== (rb < r0))) messageCount++;
        }
      }
      const detailed = !surely && eventCount + messageCount <= DETAIL_MAX;

      let svg = `<defs><marker id="arrowhead" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#4a6fa5"></path></marker>` +
        `<marker id="lostmark" viewBox="0 0 8 8" refX="4" refY="4" markerWidth="8" markerHeight="8"><path d="M0,0 L8,8 M8,0 L0,8" stroke="#c62828" stroke-width="1.6"></path></marker>` +
        `<clipPath id="plot-clip"><rect x="${LABEL_W}" y="${AXIS_H}" width="${v.plotW + 8}" height="${v.height}"></rect></clipPath></defs>`;
      svg += '<g id="lanes">';
      for (let r = r0; r <= r1; r++) {
        const lane = T.lanes[rows[r]], y = yOf(r, v);
        svg += `<rect class="lane-band ${r % 2 ? "odd" : "even"} k-${lane.kind}" x="0" y="${y}" width="${v.width}" height="${ROW_H}"></rect>`;
      }
      svg += "</g>";

      // Fault windows under everything else.
      svg += '<g id="faults" clip-path="url(#plot-clip)">';
      T.faults.forEach((f, i) => {
        if (f.e < state.from || f.s > state.to) return;
        const x = xOf(f.s, v), w = Math.max(3, xOf(f.e, v) - x);
        const title = `<title>${esc(f.k + ": " + f.n + " (" + fmtMs(f.s) + " to " + fmtMs(f.e) + ")")}</title>`;
        if (f.lanes.length === 0) {
          svg += `<rect class="fault fault-${cls(f.k)}" data-fault="${i}" x="${x}" y="${AXIS_H}" width="${w}" height="${v.height}">${title}</rect>`;
          return;
        }
        const lanes = new Set();
        for (const lane of f.lanes) { lanes.add(lane); for (const c of children[lane]) lanes.add(c); }
        for (const lane of lanes) {
          const r = rowOf[lane];
          if (r < 0 || !rowShown(r)) continue;
          svg += `<rect class="fault fault-${cls(f.k)}" data-fault="${i}" x="${x}" y="${yOf(r, v)}" width="${w}" height="${ROW_H}">${title}</rect>`;
        }
      });
      svg += "</g>";

      if (detailed) {
        svg += '<g id="events" clip-path="url(#plot-clip)">';
        for (let i = e0; i < e1; i++) {
          const r = rowOf[E.lane[i]];
          if (!evMask[i] || r < 0 || !rowShown(r)) continue;
          const x = xOf(E.t[i], v), y = yOf(r, v) + ROW_H / 2, k = cls(T.S[E.kind[i]]);
          const w = E.d[i] > 0 ? xOf(E.t[i] + E.d[i], v) - x : 0;
          const sel = state.selected && state.selected.type === "event" && state.selected.i === i ? " selected" : "";
          const title = `<title>${esc(T.S[E.label[i]])}</title>`;
          svg += w >= 3
            ? `<rect class="ev k-${k}${sel}" data-event="${i}" x="${x}" y="${y - 5}" width="${w}" height="10">${title}</rect>`
            : `<circle class="ev k-${k}${sel}" data-event="${i}" cx="${x}" cy="${y}" r="4">${title}</circle>`;
        }
        svg += '</g><g id="arrows" clip-path="url(#plot-clip)">';
        for (let i = m0; i < m1; i++) {
          if (!msgMask[i] || M.end[i] < state.from) continue;
          const ra = rowOf[M.a[i]], rb = rowOf[M.b[i]];
          if (ra < 0 || rb < 0 || !(rowShown(ra) || rowShown(rb) || (ra < r0) !== (rb < r0))) continue;
          const lost = M.lat[i] < 0, end = M.end[i];
          const x1 = xOf(M.t[i], v), y1 = yOf(ra, v) + ROW_H / 2, x2 = xOf(end, v), y2 = yOf(rb, v) + ROW_H / 2;
          const lat = lost ? -1 - M.lat[i] : M.lat[i];
          const name = M.id[i] >= 0 ? T.S[M.id[i]] + (M.seq[i] > 0 ? " #" + M.seq[i] : "") : M.bytes[i] + " B";
          const sel = state.selected && state.selected.type === "message" && state.selected.i === i ? " selected" : "";
          // A lost message ends where it was lost, short of its receiver's lane.
          const ly = lost ? y1 + (y2 - y1) * 0.6 : y2;
          svg += `<line class="arrow k-${cls(T.S[M.kind[i]])}${lost ? " lost" : ""}${sel}" data-message="${i}" x1="${x1}" y1="${y1}" x2="${x2}" y2="${ly}" marker-end="url(#${lost ? "lostmark" : "arrowhead"})">` +
            `<title>${esc(name + ": " + (lost ? "lost after " : "latency ") + fmtMs(lat))}</title></line>`;
          if (!lost && x2 - x1 > 70) {
            svg += `<text class="lat" x="${(x1 + x2) / 2 + 3}" y="${(y1 + y2) / 2 - 2}">${esc(fmtMs(lat))}</text>`;
          }
        }
        svg += "</g>";
      } else {
        // Too many to draw one by one: count events and message ends per lane and pixel column.
        const bins = Math.max(1, Math.floor(v.plotW / 2));
        const rowsShown = r1 - r0 + 1;
        const counts = new Float32Array(rowsShown * bins);
        const span = state.to - state.from;
        const add = (row, t) => {
          if (row < r0 || row > r1 || t < state.from || t > state.to) return;
          counts[(row - r0) * bins + Math.min(bins - 1, Math.floor((t - state.from) / span * bins))]++;
        };
        for (let i = e0; i < e1; i++) if (evMask[i]) add(rowOf[E.lane[i]], E.t[i]);
        for (let i = m0; i < m1; i++) {
          if (!msgMask[i]) continue;
          const ra = rowOf[M.a[i]], rb = rowOf[M.b[i]];
          if (ra >= 0) add(ra, M.t[i]);
          if (rb >= 0) add(rb, M.end[i]);
        }
        let max = 1;
        for (let i = 0; i < counts.length; i++) if (counts[i] > max) max = counts[i];
        const scale = Math.log(1 + max);
        for (let r = 0; r < rowsShown; r++) {
          const y = yOf(r + r0, v) + 3;
          for (let b = 0; b < bins; b++) {
            const c = counts[r * bins + b];
            if (c === 0) continue;
            ctx.fillStyle = `rgba(47,126,216,${(0.25 + 0.75 * Math.log(1 + c) / scale).toFixed(3)})`;
            ctx.fillRect(LABEL_W + b * (v.plotW / bins), y, Math.max(1, v.plotW / bins), ROW_H - 6);
          }
        }
        svg += `<text class="agg-note" id="aggregated" x="${LABEL_W + 4}" y="${v.height - 6}">${surely ? "up to " : ""}${eventCount} events and ${messageCount} messages here: drawn as counts per pixel column; zoom in (wheel, drag, or the window fields) to see each one</text>`;
      }

      svg += '<g id="violation-marks" clip-path="url(#plot-clip)">';
      T.violations.forEach((viol, i) => {
        if (i === 0 || viol.t < state.from || viol.t > state.to) return;
        const x = xOf(viol.t, v);
        svg += `<line class="violation-mark" x1="${x}" y1="${AXIS_H}" x2="${x}" y2="${v.height}"><title>${esc("[" + viol.checker + "] " + viol.msg)}</title></line>`;
      });
      svg += "</g>";
      if (first && first.t >= state.from && first.t <= state.to) {
        const x = xOf(first.t, v);
        const r = first.lane >= 0 ? rowOf[first.lane] : -1;
        const y = r >= 0 ? yOf(r, v) + ROW_H / 2 : AXIS_H + 10;
        svg += `<a href="#violation-0" class="violation-marker" id="first-violation-marker"><line x1="${x}" y1="${AXIS_H}" x2="${x}" y2="${v.height}"></line>` +
          `<circle cx="${x}" cy="${y}" r="6" fill="#c62828"></circle>` +
          // The label stays inside the plot: left of the line when the line is near the right edge.
          (x + 180 > LABEL_W + v.plotW
            ? `<text x="${x - 8}" y="${Math.max(AXIS_H + 12, y - 8)}" text-anchor="end">first violation: ${esc(first.checker)}</text>`
            : `<text x="${x + 8}" y="${Math.max(AXIS_H + 12, y - 8)}">first violation: ${esc(first.checker)}</text>`) +
          `<title>${esc("[" + first.checker + "] " + first.msg)}</title></a>`;
      }

      svg += `<rect class="label-column" x="0" y="${AXIS_H}" width="${LABEL_W - 4}" height="${v.height}"></rect><g id="lane-labels">`;
      for (let r = r0; r <= r1; r++) {
        const lane = T.lanes[rows[r]];
        const indent = lane.parent >= 0 ? 14 : 4;
        svg += `<text class="lane-label k-${lane.kind}" data-lane="${esc(lane.id)}" x="${indent}" y="${yOf(r, v) + ROW_H / 2 + 4}">${esc(lane.label.length > 26 ? lane.label.slice(0, 25) + "\u2026" : lane.label)}<title>${esc(lane.id)}</title></text>`;
      }
      svg += "</g>" + axis(v);
      ui.svg.innerHTML = svg;
      ui.svg.dataset.mode = detailed ? "detailed" : "aggregated";
      // What is on screen, for anyone checking the drawing against the data (the page tests do).
      window.timelineView = { from: state.from, to: state.to, labelWidth: LABEL_W, plotWidth: v.plotW, mode: ui.svg.dataset.mode, rows: rows.length };
      document.getElementById("window-from").value = (state.from / TICKS_PER_MS).toFixed(3);
      document.getElementById("window-to").value = (state.to / TICKS_PER_MS).toFixed(3);
      document.getElementById("status").textContent =
        `${rows.length} lanes shown; window ${fmtMs(state.from)} to ${fmtMs(state.to)}: ${surely ? "up to " : ""}${eventCount} events, ${messageCount} messages ${detailed ? "drawn" : "counted"}`;
    }

    let pending = false;
    const schedule = () => { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; render(); }); } };

    function setWindow(from, to) {
      const minSpan = 10; // one microsecond
      from = Math.max(0, from);
      to = Math.min(T.endTicks, to);
      if (to - from < minSpan) { const mid = (from + to) / 2; from = mid - minSpan / 2; to = mid + minSpan / 2; }
      state.from = from;
      state.to = to;
      schedule();
    }
    function zoom(factor, atX) {
      const v = view();
      const center = atX === undefined ? (state.from + state.to) / 2 : tOf(atX, v);
      const span = (state.to - state.from) * factor;
      const left = atX === undefined ? 0.5 : (atX - LABEL_W) / v.plotW;
      setWindow(center - span * left, center + span * (1 - left));
    }

    function showDetails(html) { document.getElementById("details").innerHTML = html; }
    const row = (k, v) => `<tr><td>${esc(k)}</td><td>${esc(v)}</td></tr>`;
    function detailsOfEvent(i) {
      const E = T.events;
      let html = `<h2>${esc(T.S[E.label[i]])}</h2><table>` + row("event", "#" + i) + row("kind", T.S[E.kind[i]]) +
        row("lane", T.lanes[E.lane[i]].id) + row("time", fmtMs(E.t[i]) + " (" + E.t[i] + " ticks)");
      if (E.d[i] > 0) html += row("duration", fmtMs(E.d[i]));
      if (E.fields[i] >= 0) for (const [k, v] of T.fieldSets[E.fields[i]]) html += row(k, v);
      showDetails(html + "</table>");
    }
    function detailsOfMessage(i) {
      const M = T.messages, lost = M.lat[i] < 0, lat = lost ? -1 - M.lat[i] : M.lat[i];
      let html = `<h2>message #${i}</h2><table>` + row("kind", T.S[M.kind[i]]) + row("from", T.lanes[M.a[i]].id) + row("to", T.lanes[M.b[i]].id) +
        row("sent", fmtMs(M.t[i]) + " (" + M.t[i] + " ticks)") +
        (lost ? row("lost", fmtMs(M.t[i] + lat) + ": " + T.S[M.lost[i]]) : row("delivered", fmtMs(M.t[i] + lat)) + row("latency", fmtMs(lat))) +
        row("bytes", M.bytes[i]);
      if (M.id[i] >= 0) {
        html += row("msgId", T.S[M.id[i]]) + row("msgSeq", M.seq[i]) + row("stageId", M.st[i]) + row("errorCode", M.err[i]);
        if (M.fr[i] > 1) html += row("frames in this send", M.fr[i]);
      } else {
        html += row("frame", "not decoded (bytes only)");
      }
      if (M.fields[i] >= 0) for (const [k, v] of T.fieldSets[M.fields[i]]) html += row(k, v);
      showDetails(html + "</table>");
    }
    function detailsOfFault(i) {
      const f = T.faults[i];
      showDetails(`<h2>${esc(f.k)}</h2><table>` + row("what", f.n) + row("from", fmtMs(f.s)) + row("to", fmtMs(f.e)) +
        row("lanes", f.lanes.length === 0 ? "all" : f.lanes.map(l => T.lanes[l].id).join(", ")) + "</table>");
    }

    ui.svg.addEventListener("click", ev => {
      const target = ev.target.closest("[data-event],[data-message],[data-fault]");
      if (!target) return;
      if (target.dataset.event !== undefined) { state.selected = { type: "event", i: +target.dataset.event }; detailsOfEvent(+target.dataset.event); }
      else if (target.dataset.message !== undefined) { state.selected = { type: "message", i: +target.dataset.message }; detailsOfMessage(+target.dataset.message); }
      else detailsOfFault(+target.dataset.fault);
      schedule();
    });
    ui.svg.addEventListener("wheel", ev => {
      ev.preventDefault();
      if (ev.shiftKey) { const span = state.to - state.from; const dt = span * (ev.deltaY > 0 ? 0.15 : -0.15); setWindow(state.from + dt, state.to + dt); return; }
      zoom(ev.deltaY > 0 ? 1.25 : 0.8, ev.offsetX);
    }, { passive: false });
    let drag = null;
    ui.svg.addEventListener("mousedown", ev => { if (ev.offsetX > LABEL_W) { drag = { x: ev.clientX, from: state.from, to: state.to }; ui.svg.classList.add("dragging"); } });
    window.addEventListener("mousemove", ev => {
      if (!drag) return;
      const v = view(), dt = (ev.clientX - drag.x) / v.plotW * (drag.to - drag.from);
      if (Math.abs(ev.clientX - drag.x) > 2) setWindow(drag.from - dt, drag.to - dt);
    });
    window.addEventListener("mouseup", () => { drag = null; ui.svg.classList.remove("dragging"); });
    ui.scroll.addEventListener("scroll", schedule);
    window.addEventListener("resize", schedule);
    document.getElementById("zoom-in").addEventListener("click", () => zoom(0.5));
    document.getElementById("zoom-out").addEventListener("click", () => zoom(2));
    document.getElementById("zoom-reset").addEventListener("click", () => setWindow(0, T.endTicks));
    const readWindow = () => {
      const from = parseFloat(document.getElementById("window-from").value), to = parseFloat(document.getElementById("window-to").value);
      if (isFinite(from) && isFinite(to) && to > from) setWindow(from * TICKS_PER_MS, to * TICKS_PER_MS);
    };
    document.getElementById("window-from").addEventListener("change", readWindow);
    document.getElementById("window-to").addEventListener("change", readWindow);
    let filterTimer = 0;
    for (const name of ["request", "actor", "stage"]) {
      const input = document.getElementById("filter-" + name);
      const update = () => { state.filter[name] = input.value; clearTimeout(filterTimer); filterTimer = setTimeout(() => { applyFilter(); schedule(); }, 120); };
      input.addEventListener("input", update);
      input.addEventListener("change", update);
    }
    document.querySelectorAll("#lane-kinds input").forEach(box => box.addEventListener("change", () => {
      const kind = +box.dataset.kind;
      if (box.checked) state.hiddenKinds.delete(kind); else state.hiddenKinds.add(kind);
      applyFilter();
      schedule();
    }));
    document.getElementById("violations").addEventListener("click", ev => {
      const link = ev.target.closest("[data-violation]");
      if (!link) return;
      ev.preventDefault();
      focusOn(T.violations[+link.dataset.violation].t);
    });
    const firstLink = document.getElementById("first-violation-link");
    if (firstLink) firstLink.addEventListener("click", () => focusOn(first.t));

    // A window around an instant: a tenth of the run, at least a millisecond each side.
    function focusOn(t) {
      const half = Math.max(TICKS_PER_MS, T.endTicks / 20);
      setWindow(t - half, t + half);
    }

    // Many lanes: the network paths start hidden so the clients and servers fit.
    if (T.lanes.length > 200) {
      state.hiddenKinds.add(1);
      document.querySelector('#lane-kinds input[data-kind="1"]').checked = false;
    }
    // A link may name a window or an instant: #from=MS&to=MS or #t=MS.
    const params = new URLSearchParams(location.hash.slice(1));
    applyFilter();
    if (params.has("from") && params.has("to")) setWindow(+params.get("from") * TICKS_PER_MS, +params.get("to") * TICKS_PER_MS);
    else if (params.has("t")) focusOn(+params.get("t") * TICKS_PER_MS);
    render();
  }

  window.playHousePageData().then(data => {
    stats.parsed = performance.now();
    const T = decode(data);
    stats.decoded = performance.now();
    stats.events = T.events.n;
    stats.messages = T.messages.n;
    start(T);
    stats.rendered = performance.now();
    stats.loadMs = stats.rendered - stats.started;
    document.body.dataset.ready = "true";
  }).catch(error => {
    document.body.appendChild(el("p", { id: "page-error" }, "This page could not be drawn: " + esc(error && error.message || error)));
    document.body.dataset.ready = "error";
    console.error(error);
  });
})();
