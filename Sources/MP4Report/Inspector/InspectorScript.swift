/// The inspector page's script: it reads the embedded facts (``InspectorData``) and draws the
/// views. Written here, no library; it makes no request except, on a live page, the status
/// polls and the video of the server that sent it. Any error it meets is shown at the top of
/// the page (and `data-errors` on `<body>` counts them), so a headless check sees it.
enum InspectorScript {
    static let javaScript = #"""
    "use strict";
    (function () {
      const started = performance.now();
      const errors = [];
      function report(message) {
        errors.push(String(message));
        document.body.dataset.errors = String(errors.length);
        let box = document.getElementById("errors");
        if (!box) { box = document.createElement("pre"); box.id = "errors"; box.className = "errors"; document.body.prepend(box); }
        box.textContent = "Errors on this page:\n" + errors.join("\n");
      }
      window.addEventListener("error", (event) => report(event.message));
      window.addEventListener("unhandledrejection", (event) => report(event.reason));
      document.addEventListener("securitypolicyviolation", (event) => report("blocked by the page's policy: " + event.blockedURI + " (" + event.violatedDirective + ")"));
      // What the page loaded (none for a file page; a live page's status and video): counted
      // on <body> for a headless check.
      function recordResources() {
        const entries = performance.getEntriesByType("resource");
        document.body.dataset.resources = String(entries.length);
        document.body.dataset.resourceOrigins = [...new Set(entries.map((entry) => new URL(entry.name).origin))].join(" ");
      }
      const consoleError = console.error.bind(console);
      console.error = (...args) => { report(args.join(" ")); consoleError(...args); };

      const NS = "http://www.w3.org/2000/svg"; // the SVG namespace name, not a resource
      function el(tag, attributes, ...children) {
        const node = document.createElement(tag);
        return fill(node, attributes, children);
      }
      function svg(tag, attributes, ...children) {
        const node = document.createElementNS(NS, tag);
        return fill(node, attributes, children);
      }
      function fill(node, attributes, children) {
        for (const [name, value] of Object.entries(attributes || {})) {
          if (value === undefined || value === null) continue;
          if (name === "text") node.textContent = value; else node.setAttribute(name, value);
        }
        for (const child of children) {
          if (child === null || child === undefined) continue;
          node.append(child instanceof Node ? child : String(child));
        }
        return node;
      }
      function grouped(n) { return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
      // A byte range [a, b) as its first and last byte, as `mp4probe seek` prints ranges.
      function span(a, b) { return grouped(a) + "–" + grouped(Math.max(a, b - 1)); }
      function bytes(n) {
        if (n < 1024) return n + " B";
        const units = ["KiB", "MiB", "GiB", "TiB"];
        let amount = n / 1024, unit = 0;
        while (amount >= 1024 && unit < units.length - 1) { amount /= 1024; unit += 1; }
        return amount.toFixed(1) + " " + units[unit];
      }
      function clock(seconds) {
        if (!isFinite(seconds) || seconds < 0) return "?";
        const ms = Math.round(seconds * 1000);
        const pad = (v, w) => String(v).padStart(w, "0");
        return pad(Math.floor(ms / 3600000), 2) + ":" + pad(Math.floor(ms / 60000) % 60, 2) + ":" + pad(Math.floor(ms / 1000) % 60, 2) + "." + pad(ms % 1000, 3);
      }
      function rate(bitsPerSecond) {
        if (bitsPerSecond === null || bitsPerSecond === undefined) return "";
        if (bitsPerSecond >= 10000000) return (bitsPerSecond / 1000000).toFixed(1) + " Mb/s";
        if (bitsPerSecond < 1000) return bitsPerSecond + " b/s";
        return grouped(Math.round(bitsPerSecond / 1000)) + " kb/s";
      }

      const D = JSON.parse(document.getElementById("facts").textContent);
      const app = document.getElementById("app");
      app.textContent = "";
      const size = Math.max(1, D.size);
      const X = (offset) => offset / size * 1000;
      const W = (count) => Math.max(0.4, count / size * 1000);
      // Seek plans and cached ranges stay visible however small they are against the file.
      const Wmark = (count) => Math.max(2, count / size * 1000);
      const boxColours = { ftyp: "#7d8796", styp: "#7d8796", moov: "#c0392b", mdat: "#3d7be0", moof: "#e69a28", fragments: "#f0c060",
        free: "#b8bfc9", skip: "#b8bfc9", wide: "#b8bfc9", sidx: "#8e44ad", mfra: "#16a085", meta: "#a93226", uuid: "#5d6d7e" };
      const colourOf = (type) => boxColours[type] || "#95a5a6";
      const trackColours = { video: "#3d7be0", audio: "#27ae60", subtitle: "#e67e22", text: "#e67e22", timecode: "#7f8c8d" };
      const trackColour = (kind) => trackColours[kind] || "#8e44ad";
      // Overlays redrawn by the seek explorer and the live status.
      const planLayers = [];
      const cacheLayers = [];

      // The verdict, as info states it.
      const good = D.placement === "moov-before-mdat";
      const bad = D.placement === "moov-after-mdat" || D.verdict.startsWith("NO");
      app.append(el("h1", { text: D.name }));
      app.append(el("div", { class: "muted" }, grouped(D.size) + " bytes (" + bytes(D.size) + ") · " + D.kind +
        (D.duration !== null ? " · " + clock(D.duration) : "") + " · " + D.tracks.length + (D.tracks.length === 1 ? " track" : " tracks")));
      app.append(el("div", { class: "verdict " + (good ? "ok" : bad ? "bad" : ""), id: "verdict" },
        el("b", { text: "Faststart: " }), D.verdict));

      // The byte map: top-level boxes in proportion, the bytes before playback, seek plans and
      // the cache drawn over them.
      app.append(el("h2", { text: "Byte map" }));
      const map = svg("svg", { viewBox: "0 0 1000 70", preserveAspectRatio: "none", class: "map", role: "img", "aria-label": "byte map", height: "70" });
      for (const [type, offset, count] of D.layout) {
        const rect = svg("rect", { x: X(offset), y: 14, width: W(count), height: 34, fill: colourOf(type) },
          svg("title", { text: type + " @" + grouped(offset) + ", " + grouped(count) + " bytes (" + bytes(count) + ")" }));
        map.append(rect);
      }
      const planOnMap = svg("g", {});
      const cacheOnMap = svg("g", {});
      map.append(planOnMap, cacheOnMap);
      planLayers.push({ group: planOnMap, y: 2, height: 10, x: X, w: Wmark });
      cacheLayers.push({ group: cacheOnMap, y: 52, height: 8, x: X, w: Wmark });
      if (D.startupBytes !== null) {
        const x = Math.min(999.5, X(D.startupBytes));
        map.append(svg("line", { x1: x, x2: x, y1: 0, y2: 70, stroke: "#111", "stroke-width": 2, "vector-effect": "non-scaling-stroke" },
          svg("title", { text: "a progressive player can start after " + grouped(D.startupBytes) + " bytes" })));
      }
      // The map and the interleaving rows share one column, so an offset lines up in both. A
      // live page puts its video beside the map.
      const mapColumn = el("div", { class: "map-column" });
      const mapRows = el("div", { class: "rows" }, el("div", { class: "row" }, el("span", { class: "label", text: "file (" + bytes(D.size) + ")" }), map));
      mapColumn.append(mapRows);
      const liveColumn = D.live ? el("div", { class: "live-column", id: "live" }) : null;
      app.append(D.live ? el("div", { class: "live-grid" }, mapColumn, liveColumn) : mapColumn);

      // Zoomed rows, each at its own scale: the start of the file (up to a little past the
      // bytes before playback) and the moov where it is not in that start; the moov's children
      // drawn inside it, so a moov that is a sliver of the whole file can be read.
      const moovNode = D.boxes.find((box) => box.t === "moov");
      function zoomRow(label, from, to) {
        const length = Math.max(1, to - from);
        const x = (offset) => (Math.min(Math.max(offset, from), to) - from) / length * 1000;
        const w = (count, at) => Math.max(2, x(at + count) - x(at));
        const row = svg("svg", { viewBox: "0 0 1000 62", class: "map zoom", role: "img", "aria-label": label });
        const labelled = (type, a, b, y, height, fill, title, text) => {
          const g = svg("g", {}, svg("rect", { x: x(a), y: y, width: Math.max(0.6, x(b) - x(a)), height: height, fill: fill, stroke: "#fff", "stroke-width": 0.5 }, svg("title", { text: title })));
          if (x(b) - x(a) > 7 * text.length + 8) g.append(svg("text", { x: (x(a) + x(b)) / 2, y: y + height / 2 + 4, "text-anchor": "middle", text: text }));
          return g;
        };
        for (const [type, offset, count] of D.layout) {
          if (offset + count <= from || offset >= to) continue;
          row.append(labelled(type, offset, offset + count, 14, 34, colourOf(type), type + " @" + grouped(offset) + ", " + grouped(count) + " bytes (" + bytes(count) + ")", type));
        }
        for (const child of (moovNode && moovNode.c) || []) {
          if (child.o + child.s <= from || child.o >= to) continue;
          row.append(labelled(child.t, child.o, child.o + child.s, 19, 24, "#e07a6f", "moov/" + child.t + " @" + grouped(child.o) + ", " + grouped(child.s) + " bytes (" + bytes(child.s) + ")", child.t));
        }
        const plan = svg("g", {}), cache = svg("g", {});
        row.append(plan, cache);
        const shows = (a, b) => b > from && a < to;
        planLayers.push({ group: plan, y: 2, height: 9, x: x, w: w, shows: shows });
        cacheLayers.push({ group: cache, y: 51, height: 8, x: x, w: w, shows: shows });
        if (D.startupBytes !== null && D.startupBytes > from && D.startupBytes <= to) {
          const at = Math.min(999, x(D.startupBytes));
          row.append(svg("line", { x1: at, x2: at, y1: 0, y2: 62, stroke: "#111", "stroke-width": 2 }, svg("title", { text: "the first frame can be shown after " + grouped(D.startupBytes) + " bytes" })));
        }
        return el("div", { class: "row" }, el("span", { class: "label", title: "bytes " + span(from, to) }, label, el("br"), el("span", { class: "muted", text: span(from, to) })), row);
      }
      const zooms = [];
      if (D.startupBytes !== null && D.placement !== "moov-after-mdat") {
        const end = Math.min(D.size, Math.max(4096, Math.ceil(D.startupBytes * 1.2)));
        if (end < D.size * 0.5) zooms.push(["start (" + bytes(end) + ")", 0, end]);
      }
      // The moov gets its own row unless the start row already shows it large enough to read.
      if (moovNode && (!zooms.length || moovNode.o + moovNode.s > zooms[0][2] || moovNode.s < (zooms[0][2] - zooms[0][1]) * 0.25)) {
        const from = Math.max(0, moovNode.o - Math.ceil(moovNode.s * 0.05)), to = Math.min(D.size, moovNode.o + moovNode.s + Math.ceil(moovNode.s * 0.05));
        if (from < to && to - from < D.size * 0.5) zooms.push(["moov (" + bytes(moovNode.s) + ")", from, to]);
      }
      for (const [label, from, to] of zooms) mapRows.append(zoomRow(label, from, to));
      const legend = el("div", { class: "legend" });
      const types = [...new Set(D.layout.map((row) => row[0]))];
      for (const type of types) {
        const rows = D.layout.filter((row) => row[0] === type);
        const total = rows.reduce((sum, row) => sum + row[2], 0);
        legend.append(el("span", {}, el("span", { class: "swatch", style: "background:" + colourOf(type) }), type + " ×" + rows.length + " (" + bytes(total) + ")"));
      }
      legend.append(el("span", {}, el("span", { class: "swatch", style: "background:#111" }), "bytes before the first frame: " + (D.startupBytes === null ? "n/a" : bytes(D.startupBytes))));
      legend.append(el("span", {}, el("span", { class: "swatch", style: "background:var(--plan)" }), "seek plan"));
      if (D.cached || D.live) legend.append(el("span", {}, el("span", { class: "swatch", style: "background:var(--cache)" }), "cached"));
      if (moovNode && zooms.length) legend.append(el("span", {}, el("span", { class: "swatch", style: "background:#e07a6f" }), "inside moov"));
      mapColumn.append(legend);
      const topLevel = el("table", { id: "top-level" }, el("tr", {}, el("th", { text: "box" }), el("th", { class: "num", text: "offset" }), el("th", { class: "num", text: "size" })));
      D.layout.slice(0, 400).forEach(([type, offset, count]) =>
        topLevel.append(el("tr", {}, el("td", {}, el("code", { text: type })), el("td", { class: "num", text: grouped(offset) }), el("td", { class: "num", text: grouped(count) }))));
      if (D.layout.length > 400) topLevel.append(el("tr", {}, el("td", { colspan: 3, class: "muted", text: "… " + grouped(D.layout.length - 400) + " more top-level boxes (the box tree lists them all)" })));
      mapColumn.append(el("details", {}, el("summary", { text: "Top-level boxes (" + D.layout.length + ")" }), topLevel));

      // Tracks, tags and chapters.
      app.append(el("h2", { text: "Tracks" }));
      const tracks = el("table", { id: "tracks" });
      tracks.append(el("tr", {}, ...["#", "kind", "codec", "codec string", "size / rate", "duration", "samples", "bit rate", "language"].map((t) => el("th", { text: t }))));
      for (const t of D.tracks) {
        const shape = t.width !== null && t.height !== null ? t.width + "x" + t.height : t.rate !== null ? grouped(t.rate) + " Hz" + (t.channels !== null ? " · " + t.channels + " ch" : "") : "";
        tracks.append(el("tr", {}, el("td", { text: t.id }), el("td", {}, el("span", { class: "swatch", style: "background:" + trackColour(t.kind) }), t.kind),
          el("td", {}, el("code", { text: t.codec || "" })), el("td", {}, el("code", { text: t.codecString || "" })), el("td", { text: shape }),
          el("td", { text: t.duration !== null ? clock(t.duration) : "" }), el("td", { class: "num", text: grouped(t.samples) }),
          el("td", { class: "num", text: rate(t.bitRate) }), el("td", { text: t.language || "" })));
      }
      app.append(tracks);
      if (D.tags.length) {
        app.append(el("h2", { text: "Tags" }));
        const tags = el("table", { id: "tags" });
        for (const [key, value] of D.tags) tags.append(el("tr", {}, el("th", { text: key }), el("td", { text: value })));
        app.append(tags);
      }
      if (D.chapters.length) {
        app.append(el("h2", { text: "Chapters" }));
        const chapters = el("table", { id: "chapters" });
        for (const [start, title] of D.chapters) chapters.append(el("tr", {}, el("td", { class: "mono", text: clock(start) }), el("td", { text: title })));
        app.append(chapters);
      }

      // Interleaving: each track's chunks along the file offset.
      app.append(el("h2", { text: "Interleaving" }));
      if (!D.chunks.length) {
        app.append(el("p", { class: "muted", text: "No sample index: the tracks' chunks are not known (a remote fragmented file is not walked)." }));
      } else {
        app.append(el("p", { class: "muted", text: "Each track's chunks along the file, left to right as on the byte map; a player reading front to back wants every track's chunks side by side." }));
        if (D.interleave) {
          const ahead = D.interleave.seconds, gap = D.interleave.bytes;
          const judged = ahead <= 1 ? "well interleaved" : ahead <= 5 ? "loosely interleaved" : "poorly interleaved";
          app.append(el("p", { id: "interleave-number" }, el("b", { text: judged + ": " + ahead.toFixed(2) + " s" }),
            " — reading front to back, one track's data is at most " + ahead.toFixed(2) + " s ahead of another's, and at most " + bytes(gap) + " (" + grouped(gap) +
            " bytes) lie between two chunks of one track" + (ahead > 1 ? "; a player reading in order buffers that much of one track to play the others" : "") +
            ". check --max-interleave S fails a file above S seconds."));
        }
        const rows = el("div", { class: "rows", id: "interleaving" });
        for (const track of D.chunks) {
          const row = svg("svg", { viewBox: "0 0 1000 18", preserveAspectRatio: "none", height: "18", class: "map" });
          const s = track.spans;
          for (let i = 0; i + 4 < s.length; i += 5) {
            row.append(svg("rect", { x: X(s[i]), y: 3, width: W(s[i + 1] - s[i]), height: 12, fill: trackColour(track.kind) },
              svg("title", { text: "track " + track.id + ": " + grouped(s[i + 4]) + (s[i + 4] === 1 ? " chunk" : " chunks") + ", bytes " + span(s[i], s[i + 1]) + ", " + clock(s[i + 2]) + "–" + clock(s[i + 3]) })));
          }
          const overlay = svg("g", {});
          row.append(overlay);
          planLayers.push({ group: overlay, y: 0, height: 3, x: X, w: Wmark });
          rows.append(el("div", { class: "row" }, el("span", { class: "label" }, el("span", { class: "swatch", style: "background:" + trackColour(track.kind) }), "#" + track.id + " " + track.kind), row));
        }
        app.append(rows);
      }

      // The seek explorer: a time, its keyframe, and the byte ranges its plan reads.
      app.append(el("h2", { text: "Seek explorer" }));
      const plans = D.plans;
      const end = D.duration || (plans.length ? plans[plans.length - 1].t : 0);
      const planText = el("div", { class: "plan", id: "plan" });
      if (!plans.length) {
        app.append(el("p", { class: "muted", text: "No seek plans: the file has no sample index here." }));
      } else {
        const slider = el("input", { type: "range", min: 0, max: end, step: "any", value: 0, "aria-label": "seek time" });
        const number = el("input", { type: "number", min: 0, max: end, step: "0.1", value: 0, "aria-label": "seek time in seconds" });
        app.append(el("div", { class: "seek" }, el("span", { text: "Seek to" }), slider, number, el("span", { class: "muted", text: "of " + clock(end) })));
        app.append(planText);
        const show = (time) => {
          let plan = plans[0];
          for (const candidate of plans) { if (candidate.t <= time + 1e-9) plan = candidate; else break; }
          const ranges = [];
          for (let i = 0; i + 1 < plan.r.length; i += 2) ranges.push([plan.r[i], plan.r[i + 1]]);
          for (const layer of planLayers) {
            layer.group.textContent = "";
            for (const [a, b] of ranges) if (!layer.shows || layer.shows(a, b)) layer.group.append(svg("rect", { x: layer.x(a), y: layer.y, width: layer.w(b - a, a), height: layer.height, fill: "var(--plan)" },
              svg("title", { text: "seek plan: bytes " + span(a, b) })));
          }
          planText.textContent = "";
          // Exact plans (one per keyframe): the keyframe a seek to this time starts at.
          // Otherwise say which planned time is shown rather than label it with the time asked.
          const at = D.plansExact ? el("b", { text: clock(time) }) : el("span", {}, el("b", { text: clock(time) }), " (the plan of " + clock(plan.t) + ", the nearest planned time before it)");
          planText.append(el("div", {}, "At ", at, ": keyframe at ", el("b", { id: "plan-keyframe", text: clock(plan.k) }),
            " (track " + plan.track + "); the first " + D.planSeconds + " s from there reads " + bytes(plan.bytes) + " in " + ranges.length + (ranges.length === 1 ? " range" : " ranges") + " (first–last byte, as mp4probe seek prints them):"));
          planText.append(el("div", { class: "mono", id: "plan-ranges", text: ranges.slice(0, 12).map(([a, b]) => span(a, b)).join(", ") + (ranges.length > 12 ? ", …" : "") }));
        };
        slider.addEventListener("input", () => { number.value = Number(slider.value).toFixed(1); show(Number(slider.value)); });
        number.addEventListener("change", () => { slider.value = number.value; show(Number(number.value)); });
        // A link can name the time: PAGE#t=200.5.
        const asked = Number((location.hash.match(/t=([0-9.]+)/) || [])[1]);
        const first = isFinite(asked) && asked >= 0 ? Math.min(asked, end) : 0;
        slider.value = first;
        number.value = first.toFixed(1);
        show(first);
      }

      if (D.findings.length) {
        app.append(el("h2", { text: "Findings" }));
        const list = el("ul", { id: "findings" });
        for (const [severity, id, message, offset] of D.findings) {
          list.append(el("li", { class: "finding " + severity }, el("b", { text: severity + " " }), el("code", { text: id }), offset !== null ? " @" + grouped(offset) : "", ": " + message));
        }
        app.append(list);
      }

      // The box tree; a box's children are drawn when it is first opened. A long list of
      // siblings (a fragmented film's moof/mdat pairs) shows its first boxes, then folds the
      // rest in groups, each summarised and drawn when opened.
      app.append(el("h2", { text: "Boxes" }));
      const unfolded = 20, foldAbove = 60, perFold = 100;
      function appendBoxes(container, boxes, openMoov) {
        if (boxes.length <= foldAbove) { for (const box of boxes) container.append(boxNode(box, openMoov && box.t === "moov")); return; }
        for (const box of boxes.slice(0, unfolded)) container.append(boxNode(box, openMoov && box.t === "moov"));
        for (let start = unfolded; start < boxes.length; start += perFold) {
          const group = boxes.slice(start, start + perFold);
          const counts = new Map();
          for (const box of group) counts.set(box.t, (counts.get(box.t) || 0) + 1);
          const last = group[group.length - 1];
          const summary = "boxes " + grouped(start + 1) + "–" + grouped(start + group.length) + " of " + grouped(boxes.length) + ": " +
            [...counts].map(([type, n]) => type + " ×" + n).join(", ") + " · bytes " + span(group[0].o, last.o + last.s);
          const fold = el("details", { class: "fold" }, el("summary", { class: "muted", text: summary }));
          let drawn = false;
          fold.addEventListener("toggle", () => { if (drawn) return; drawn = true; for (const box of group) fold.append(boxNode(box, false)); });
          container.append(fold);
        }
      }
      const tree = el("div", { class: "tree", id: "tree" });
      function boxLine(box) {
        const line = [el("span", { class: "box", text: box.t }), " @" + grouped(box.o) + " size " + grouped(box.s)];
        if (box.n) line.push(el("span", { class: "muted", text: " " + box.n }));
        if (box.v !== undefined) line.push(el("span", { class: "muted", text: " v" + box.v + " flags " + box.fl }));
        if (box.x) line.push(el("span", { class: "finding error", text: " (truncated)" }));
        if (box.f) line.push(el("div", { class: "fields", text: box.f.map(([name, value]) => name + "=" + value).join("  ") }));
        return line;
      }
      function boxNode(box, open) {
        if (!box.c || !box.c.length) return el("div", { class: "leaf" }, ...boxLine(box));
        const details = el("details", {}, el("summary", {}, ...boxLine(box)));
        let drawn = false;
        const draw = () => {
          if (drawn) return;
          drawn = true;
          appendBoxes(details, box.c, false);
          if (box.more) details.append(el("div", { class: "muted", text: "… " + grouped(box.more) + " more boxes (mp4probe boxes lists them all)" }));
        };
        details.addEventListener("toggle", draw);
        if (open) { details.open = true; draw(); }
        return details;
      }
      appendBoxes(tree, D.boxes, true);
      app.append(tree);


      // The cache: ranges drawn under the byte map; on a live page, refreshed from the server.
      function drawCache(ranges) {
        for (const layer of cacheLayers) {
          layer.group.textContent = "";
          for (let i = 0; i + 1 < ranges.length; i += 2) if (!layer.shows || layer.shows(ranges[i], ranges[i + 1])) layer.group.append(svg("rect", { x: layer.x(ranges[i]), y: layer.y, width: layer.w(ranges[i + 1] - ranges[i], ranges[i]), height: layer.height, fill: "var(--cache)" },
            svg("title", { text: "cached: bytes " + span(ranges[i], ranges[i + 1]) })));
        }
      }
      if (D.cached) drawCache(D.cached);
      if (D.live) {
        // Nothing is fetched for the video before play (preload none); PAGE#play starts it,
        // muted (browsers start only muted media without a click; the controls unmute it).
        const status = el("div", { class: "muted", id: "cache-status", text: "…" });
        const video = el("video", { controls: "", preload: "none", src: D.live.video });
        liveColumn.append(el("div", { class: "live-title", text: "Playing through the proxy" }), video, status);
        if (/(^#|&)play\b/.test(location.hash)) {
          document.body.dataset.play = "asked";
          video.muted = true;
          video.play().then(() => { document.body.dataset.play = "playing"; }, (error) => { document.body.dataset.play = "failed"; report("the video could not start: " + error); });
        }
        const poll = async () => {
          try {
            const response = await fetch(D.live.status, { cache: "no-store" });
            const s = await response.json();
            drawCache((s.cachedRanges || []).flat());
            status.textContent = "cached " + grouped(s.cachedBytes) + " of " + (s.length === null ? "?" : grouped(s.length)) + " bytes; plays " +
              (s.playableSeconds || 0).toFixed(1) + " s from the start" + (s.movieCached ? "" : " (moov not cached yet)");
            document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
            recordResources();
          } catch (error) {
            status.textContent = "status unavailable: " + error;
          }
          setTimeout(poll, 1000);
        };
        poll();
      }

      const took = performance.now() - started;
      app.append(el("footer", {}, "mp4probe inspect · drawn in " + took.toFixed(0) + " ms · nothing on this page was loaded from the network" + (D.live ? " except this proxy's status and video" : "")));
      document.body.dataset.renderMs = took.toFixed(0);
      recordResources();
      document.body.dataset.rendered = "1";
    })();
    """#
}
