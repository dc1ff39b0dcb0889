// PlayHouse.Sim pages: reads the data a page carries in #page-data, plain JSON or (when large) gzip in base64,
// opened with the browser's own DecompressionStream. Nothing is fetched.
"use strict";
window.playHousePageData = async function () {
  const node = document.getElementById("page-data");
  if (node.dataset.encoding === "gzip-base64") {
    const text = atob(node.textContent.trim());
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  return JSON.parse(node.textContent);
};
