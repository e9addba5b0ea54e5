// The report's interactions: source <-> IR, the graph's zoom, pan, search and node details, links from
// kernels and profile rows to nodes. Everything it needs is in the page (one JSON block per entry).
"use strict";

const SOURCES = {};  // "file:line" -> text of that source line
document.querySelectorAll(".code.src").forEach(pane => {
  pane.querySelectorAll(".ln").forEach((row, i) => { SOURCES[pane.dataset.file + ":" + (i + 1)] = row.textContent; });
});

function esc(text) {
  return String(text).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
}

function scrollInto(pane, row) {
  if (!pane || !row) return;
  pane.scrollTop = row.offsetTop - pane.clientHeight / 3;
}

class Entry {
  constructor(section, data) {
    this.section = section;
    this.data = data;
    this.id = section.dataset.entry;
    this.irPane = section.querySelector(".ir-pane .code");
    this.srcPanes = section.querySelectorAll(".src-pane .code");
    this.status = section.querySelector(".part-source .status");
    this.irRows = this.irPane ? this.irPane.querySelectorAll(".ln") : [];
    this.lit = [];
    this.lineNode = {};  // IR line index -> node id
    for (const [id, node] of Object.entries(data.nodes)) if (node.l !== undefined) this.lineNode[node.l] = id;
    this.graph = new GraphView(this, section.querySelector(".graph-wrap"));
    this.wireCode();
    this.wireLinks();
  }

  wireCode() {
    const pick = this.section.querySelector(".file-pick");
    const showFile = name => this.srcPanes.forEach(p => { p.style.display = p.dataset.file === name ? "" : "none"; });
    if (pick) { showFile(pick.value); pick.addEventListener("change", () => showFile(pick.value)); }
    this.srcPanes.forEach(pane => pane.addEventListener("click", ev => {
      const row = ev.target.closest(".ln.hot");
      if (row) this.showSource(row.dataset.loc, true);
    }));
    if (this.irPane) this.irPane.addEventListener("click", ev => {
      const row = ev.target.closest(".ln");
      if (row) this.showIR(Number(row.dataset.l));
    });
  }

  wireLinks() {  // one listener for the kernel and profile sections: links to nodes
    this.section.addEventListener("click", ev => {
      const link = ev.target.closest("a.vlink, tr.prof-row");
      if (!link) return;
      const id = link.dataset.value ? this.data.producer[link.dataset.value] : link.dataset.node;
      if (id) this.graph.select(id, true);
    });
  }

  clear() { this.lit.forEach(r => r.classList.remove("lit", "on")); this.lit = []; }

  light(rows) { rows.forEach(r => { r.classList.add("lit"); this.lit.push(r); }); }

  sourceRow(loc) {
    const cut = loc.lastIndexOf(":");
    const pane = [...this.srcPanes].find(p => p.dataset.file === loc.slice(0, cut));
    if (!pane) return [null, null];
    const pick = this.section.querySelector(".file-pick");
    if (pick && pick.value !== pane.dataset.file) { pick.value = pane.dataset.file; pick.dispatchEvent(new Event("change")); }
    return [pane, pane.querySelectorAll(".ln")[Number(loc.slice(cut + 1)) - 1]];
  }

  showSource(loc, fromClick) {
    this.clear();
    const [pane, row] = this.sourceRow(loc);
    if (row) this.light([row]);
    const rows = [...this.irRows].filter(r => r.dataset.loc === loc);
    this.light(rows);
    if (rows.length) scrollInto(this.irPane, rows[0]);
    if (!fromClick) scrollInto(pane, row);
    if (this.status) this.status.innerHTML = `<code>${esc(loc)}</code> became ${rows.length} IR line${rows.length === 1 ? "" : "s"}` +
      (rows.length ? ` (lines ${rows.slice(0, 12).map(r => Number(r.dataset.l) + 1).join(", ")}${rows.length > 12 ? ", …" : ""})` : "");
  }

  showIR(line, scroll) {
    const row = this.irRows[line];
    if (!row) return;
    this.clear();
    this.light([row]);
    row.classList.add("on");
    if (scroll) scrollInto(this.irPane, row);
    const loc = row.dataset.loc;
    let text = `IR line ${line + 1}`;
    if (loc) {
      const [pane, src] = this.sourceRow(loc);
      if (src) { this.light([src]); scrollInto(pane, src); }
      text += ` came from <code>${esc(loc)}</code>`;
    }
    const node = this.lineNode[line];
    if (node && this.graph.has(node)) text += ` · <a data-show="${node}">show node in the graph</a>`;
    if (this.status) {
      this.status.innerHTML = text;
      const a = this.status.querySelector("a[data-show]");
      if (a) a.addEventListener("click", () => this.graph.select(a.dataset.show, true));
    }
  }

  goToIR(line) {
    this.section.querySelector(".part-source").scrollIntoView();
    this.showIR(line, true);
  }
}

class GraphView {
  constructor(entry, wrap) {
    this.entry = entry;
    this.wrap = wrap;
    if (!wrap) return;
    this.view = wrap.querySelector(".graph-view");
    this.panel = wrap.querySelector(".node-panel");
    this.svg = this.view.querySelector("svg");
    this.elements = {};
    wrap.querySelectorAll("[data-id]").forEach(el => { this.elements[el.dataset.id] = el; });
    if (!this.svg) this.view.dataset.list = "1";
    this.layer = this.svg ? this.svg.querySelector(".viewport") : null;
    if (this.layer) {
      this.w = Number(this.svg.dataset.w); this.h = Number(this.svg.dataset.h);
      this.svg.setAttribute("width", "100%"); this.svg.setAttribute("height", "100%");
      this.svg.removeAttribute("viewBox");
      this.start();
      this.wirePanZoom();
    }
    this.view.addEventListener("click", ev => {
      if (this.moved) return;
      const el = ev.target.closest("[data-id]");
      if (el && !el.dataset.id.startsWith("in-") && el.dataset.id !== "return") this.select(el.dataset.id, false);
    });
    wrap.querySelectorAll(".graph-tools button").forEach(b => b.addEventListener("click", () => this.act(b.dataset.act)));
    const find = wrap.querySelector(".graph-tools input");
    find.addEventListener("keydown", ev => { if (ev.key === "Enter") this.find(find.value.trim()); });
  }

  has(id) { return Boolean(this.elements && this.elements[id]); }

  start() {  // graphs that fit at a readable size are shown whole; larger ones start at 1:1 at the top
    const fit = Math.min(this.view.clientWidth / this.w, this.view.clientHeight / this.h);
    if (fit >= 0.85) this.fit(); else { this.k = 1; this.x = Math.max(0, (this.view.clientWidth - this.w) / 2); this.y = 0; this.apply(); }
  }

  fit() {
    const vw = this.view.clientWidth || 800, vh = this.view.clientHeight || 600;
    this.k = Math.min(vw / this.w, vh / this.h, 1.25);
    this.x = (vw - this.w * this.k) / 2; this.y = (vh - this.h * this.k) / 2;
    this.apply();
  }

  apply() { this.layer.setAttribute("transform", `translate(${this.x.toFixed(1)},${this.y.toFixed(1)}) scale(${this.k.toFixed(4)})`); }

  zoom(factor, cx, cy) {
    const k = Math.max(0.02, Math.min(6, this.k * factor));
    this.x = cx - (cx - this.x) * k / this.k; this.y = cy - (cy - this.y) * k / this.k; this.k = k;
    this.apply();
  }

  act(what) {
    if (!this.layer) return;
    const cx = this.view.clientWidth / 2, cy = this.view.clientHeight / 2;
    if (what === "fit") this.fit();
    else if (what === "in") this.zoom(1.3, cx, cy);
    else if (what === "out") this.zoom(1 / 1.3, cx, cy);
    else if (what === "one") this.zoom(1 / this.k, cx, cy);
  }

  wirePanZoom() {
    this.view.addEventListener("wheel", ev => {
      ev.preventDefault();
      const r = this.view.getBoundingClientRect();
      this.zoom(Math.exp(-ev.deltaY * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
    }, {passive: false});
    this.view.addEventListener("pointerdown", ev => {
      this.drag = {x: ev.clientX, y: ev.clientY, ox: this.x, oy: this.y};
      this.moved = false;
    });
    window.addEventListener("pointermove", ev => {
      if (!this.drag) return;
      const dx = ev.clientX - this.drag.x, dy = ev.clientY - this.drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) { this.moved = true; this.view.classList.add("dragging"); }
      this.x = this.drag.ox + dx; this.y = this.drag.oy + dy;
      if (this.moved) this.apply();
    });
    window.addEventListener("pointerup", () => {
      this.drag = null; this.view.classList.remove("dragging");
      setTimeout(() => { this.moved = false; }, 0);
    });
  }

  centre(el) {
    if (!this.layer || !el.getBBox) { el.scrollIntoView({block: "center"}); return; }
    const box = el.getBBox(), m = el.getCTM(), lm = this.layer.getCTM();
    // the element's box in the layer's own (unscaled) coordinates
    const rel = lm.inverse().multiply(m);
    const cx = rel.a * (box.x + box.width / 2) + rel.c * (box.y + box.height / 2) + rel.e;
    const cy = rel.b * (box.x + box.width / 2) + rel.d * (box.y + box.height / 2) + rel.f;
    if (this.k < 0.6) this.k = 1;
    this.x = this.view.clientWidth / 2 - cx * this.k; this.y = this.view.clientHeight / 2 - cy * this.k;
    this.apply();
  }

  select(id, reveal) {
    if (!this.wrap) return;
    this.wrap.querySelectorAll(".sel").forEach(e => e.classList.remove("sel"));
    this.wrap.querySelectorAll(".edge.lit").forEach(e => e.classList.remove("lit"));
    const el = this.elements[id];
    if (el) {
      el.classList.add("sel");
      const node = this.entry.data.nodes[id] || {o: [], i: []};
      const outs = new Set(node.g ? [] : node.o.map(o => o[0]));  // (a group's inner names are its own)
      const ins = new Set(node.g ? [] : node.i);
      if (this.layer) this.layer.querySelectorAll(".edge").forEach(e => {
        if (outs.has(e.dataset.v) || ins.has(e.dataset.v)) e.classList.add("lit");
      });
      if (reveal) { this.wrap.scrollIntoView({block: "start"}); this.centre(el); }
    }
    this.details(id);
  }

  attrPath(id) {  // "fc1.weight" for the GetAttr chain ending at node `id`
    const nodes = this.entry.data.nodes, producer = this.entry.data.producer, names = [];
    for (let n = nodes[id]; n && n.k === "prim::GetAttr"; n = nodes[producer[n.i[0]]]) names.unshift(JSON.parse(n.a).name);
    return names.join(".");
  }

  find(text) {
    if (!text) return;
    const nodes = this.entry.data.nodes;
    const name = text.replace(/^%/, "");
    let id = this.entry.data.producer[name];
    if (!id || !this.has(id)) id = Object.keys(nodes).find(k => this.has(k) && nodes[k].k.includes(text));
    if (id) this.select(id, true);
  }

  details(id) {
    const n = this.entry.data.nodes[id];
    if (!n || !this.panel) return;
    const producer = this.entry.data.producer;
    const ms = this.entry.data.ms[id];
    const value = v => producer[v] && !n.g ? `<a data-node="${producer[v]}">%${esc(v)}</a>` : `%${esc(v)}`;
    const inputs = n.i.map(v => {
      const p = !n.g && producer[v] && this.entry.data.nodes[producer[v]];
      const what = p && (p.k === "prim::Constant" ? "constant " + (p.a ? JSON.parse(p.a).value : "None") :
        p.k === "prim::GetAttr" ? `${this.attrPath(producer[v])} · ${p.o[0][1]}` : "");
      return `<li>${value(v)}${what ? ` <span class="note">${esc(what)}</span>` : ""}</li>`;
    }).join("");
    let html = `<h4>${esc(n.k)}</h4><dl>`;
    html += `<dt>outputs</dt><dd>${n.o.map(o => `<code>%${esc(o[0])} : ${esc(o[1])}</code>`).join("<br>") || "—"}</dd>`;
    if (n.i.length) html += `<dt>inputs</dt><dd><ul style="margin:0;padding-left:16px">${inputs}</ul></dd>`;
    if (n.a) html += `<dt>attributes</dt><dd><code>${esc(n.a)}</code></dd>`;
    if (n.l !== undefined) {
      const row = this.entry.irRows[n.l];
      const text = row ? row.textContent : "";
      html += `<dt>IR line ${n.l + 1}</dt><dd><pre>${esc(text)}</pre><a data-ir="${n.l}">show it beside the source</a></dd>`;
    }
    if (n.s) {
      const src = SOURCES[n.s];
      html += `<dt>source${n.sc ? " · scope " + esc(n.sc) : ""}</dt><dd><code>${esc(n.s)}</code>` +
        (src !== undefined ? `<pre>${esc(src.trim())}</pre>` : ` <span class="note">(file not in the report)</span>`) + `</dd>`;
    }
    if (n.ker) html += `<dt>kernel</dt><dd><a data-kernel="${esc(n.ker)}">${esc(n.ker)}: code, schedule, vector width</a></dd>`;
    if (ms !== undefined) html += `<dt>profile</dt><dd>${ms.toFixed(4)} ms per run (executor)</dd>`;
    html += "</dl>";
    this.panel.innerHTML = html;
    this.panel.querySelectorAll("a[data-node]").forEach(a => a.addEventListener("click", () => this.select(a.dataset.node, true)));
    this.panel.querySelectorAll("a[data-ir]").forEach(a => a.addEventListener("click", () => this.entry.goToIR(Number(a.dataset.ir))));
    this.panel.querySelectorAll("a[data-kernel]").forEach(a => a.addEventListener("click", () => {
      const card = this.entry.section.querySelector(`.kernel-card[data-kernel="${a.dataset.kernel}"]`);
      if (card) { card.scrollIntoView({block: "start"}); card.classList.add("lit"); setTimeout(() => card.classList.remove("lit"), 1500); }
    }));
  }
}

document.querySelectorAll("section.entry").forEach(section => {
  const blob = document.querySelector(`script.entry-data[data-entry="${section.dataset.entry}"]`);
  if (blob) new Entry(section, JSON.parse(blob.textContent));
});
document.documentElement.dataset.ready = "1";  // (a headless browser check reads this: the script ran to its end)
