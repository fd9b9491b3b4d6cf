"""The assembly inspector: one self-contained HTML page that shows how a context was made.

The page shows the context window as a bar of blocks sized by tokens and
coloured by document (each labelled with its citation number and score), the
format overhead and the unused budget, the tokens per zone, every stage with
its counts, every dropped chunk with its reason and text, the rendered
context with each block marked by its citation label, and the chat sent to
the model (:func:`contextwright.chat_messages`: the system prompt, the
context and the query, and what :func:`contextwright.ask` sends again after
a bare ``[1]``).

The same page serves two uses:

* ``contextwright inspect FILE --query ... --html out.html`` writes a page for
  one assembly (the data is embedded in the page);
* ``GET /`` on the service adds a form that posts pasted chunks to
  ``/v1/assemble`` and draws the result again.

Retrieved text is untrusted. The page has no external assets, the data is
embedded as JSON with every ``<``, ``>`` and ``&`` escaped, and the script
builds the page with ``textContent`` and ``createElement`` only (never
``innerHTML``), so a chunk containing ``<script>`` is shown as text.

Example:
    >>> asm = Assembler("qa", budget=500)
    >>> ctx = asm.assemble(query, chunks)
    >>> html = render_page(inspection(ctx, asm, chunks))
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from contextwright.model.chunk import Chunk
from contextwright.model.convert import chunks_from_dicts
from contextwright.model.report import Drop
from contextwright.render.cite import chat_messages
from contextwright.render.context import AssembledContext

if TYPE_CHECKING:
    from contextwright.assembly.assembler import Assembler
    from contextwright.render.format import Format
    from contextwright.tokens import CachedTokenizer

__all__ = ["block_rows", "input_rows", "inspection", "render_page"]


def block_rows(ctx: AssembledContext, fmt: Format, tokenizer: CachedTokenizer) -> list[dict[str, Any]]:
    """One row per final block: citation label, document, score, tokens and its span in ``ctx.text``.

    ``tokens`` counts the block's header, body and footer as they appear in the
    context (cached counts, so this costs a few dict lookups). The tokens of the
    frame and of document headers are the difference to ``ctx.tokens``. For a
    template format the body is counted alone, so the sizes are approximate.
    ``start``/``end`` locate the block in the text (``None`` if it cannot be found,
    e.g. in a template that rewrites the text).
    """
    rows: list[dict[str, Any]] = []
    text = ctx.text
    cursor = 0
    for n, chunk in enumerate(ctx.chunks, 1):
        pieces = [p for p in (fmt.block_header(chunk, n), fmt.body(chunk), fmt.block_footer(chunk, n)) if p]
        tokens = sum(tokenizer.count(p) for p in pieces)
        start: int | None = None
        end = cursor
        for piece in pieces:
            needle = piece.rstrip("\n")
            if not needle:
                continue
            pos = text.find(needle, end)
            if pos < 0:
                start = None
                break
            if start is None:
                start = pos
            end = pos + len(needle)
        if start is not None:
            cursor = end
        rows.append(
            {
                "index": n,
                "label": fmt.label(n),
                "id": chunk.id,
                "chunk_ids": list(chunk.member_ids),
                "doc_id": chunk.doc_id,
                "title": chunk.title,
                "source": chunk.source,
                "score": chunk.score,
                "tokens": tokens,
                "start": start,
                "end": end if start is not None else None,
                "ops": list(chunk.ops),
                "origin": chunk.origin,
            }
        )
    return rows


def input_rows(chunks: Iterable[Chunk | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The input chunks as the pipeline saw them (ids filled in), for looking up dropped ones."""
    empty: list[Drop] = []
    rows = [
        {"id": c.id, "text": c.text, "score": c.score, "doc_id": c.doc_id, "title": c.title}
        for c in chunks_from_dicts(chunks, empty=empty)
    ]
    # chunks without text are dropped (reason "empty"); list them too, so every drop has a row
    return rows + [{"id": d.chunk_id, "text": "", "score": 0.0, "doc_id": None, "title": None} for d in empty]


def inspection(
    ctx: AssembledContext,
    assembler: Assembler,
    chunks: Iterable[Chunk | Mapping[str, Any]],
    *,
    options: Mapping[str, Any] | None = None,
    system: str | None = "default",
    reask_bare: str | None = "auto",
) -> dict[str, Any]:
    """The page data for one assembly: the /v1/assemble response with ``inspect`` and ``messages``.

    Args:
        ctx: The assembled context.
        assembler: The assembler that made it (its format and tokenizer size the blocks).
        chunks: The input chunks (to show the text of dropped ones).
        options: The options used, shown in the page header.
        system: The system prompt of the chat shown (:func:`contextwright.chat_messages`).
        reask_bare: The prompt of the re-ask shown after a bare citation (``auto``: the
            config's ``reask``, else ``light``; ``None``: none).
    """
    data = ctx.to_dict()
    data["blocks"] = block_rows(ctx, assembler.pipeline.format, assembler.tokenizer)
    data["inputs"] = input_rows(chunks)
    data["options"] = dict(options or {})
    data.update(chat_messages(ctx, system, reask_bare))
    return data


def _embed(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` survives."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_EXAMPLE = [
    {
        "id": "roentgen:0",
        "doc_id": "roentgen",
        "title": "Wilhelm Röntgen",
        "score": 0.92,
        "text": "Wilhelm Conrad Röntgen discovered X-rays on 8 November 1895 in Würzburg.",
    },
    {
        "id": "roentgen:1",
        "doc_id": "roentgen",
        "title": "Wilhelm Röntgen",
        "score": 0.61,
        "text": "For this discovery he received the first Nobel Prize in Physics in 1901.",
    },
    {
        "id": "xray:3",
        "doc_id": "xray",
        "title": "X-ray",
        "score": 0.55,
        "text": "X-rays are a form of high-energy electromagnetic radiation.",
    },
    {
        "id": "xray:3-copy",
        "doc_id": "xray-mirror",
        "title": "X-ray (mirror)",
        "score": 0.40,
        "text": "X-rays are a form of high-energy electromagnetic radiation.",
    },
]


def render_page(
    data: Mapping[str, Any] | None,
    *,
    interactive: bool = False,
    options: Mapping[str, Any] | None = None,
    title: str = "contextwright inspector",
) -> str:
    """The inspector page as one HTML string (no external assets).

    Args:
        data: The page data (:func:`inspection`, or a /v1/assemble response
            with ``blocks`` and ``inputs``); ``None`` for an empty page.
        interactive: Add the form that posts to ``v1/assemble`` (the service's ``GET /``).
        options: Form defaults: ``presets`` (list), ``preset``, ``budget``, ``model``.
        title: The page title.
    """
    opts = dict(options or {})
    form = ""
    if interactive:
        presets = [str(p) for p in opts.get("presets") or ["qa"]]
        chosen = str(opts.get("preset") or presets[0])
        preset_options = "".join(
            f'<option value="{html.escape(p)}"{" selected" if p == chosen else ""}>{html.escape(p)}</option>'
            for p in presets
        )
        budget = opts.get("budget")
        budget_value = html.escape(str(budget if budget is not None else 300))
        model_value = html.escape(str(opts.get("model") or ""))
        example = html.escape(json.dumps(_EXAMPLE, indent=2, ensure_ascii=False))
        form = _FORM.format(presets=preset_options, budget=budget_value, model=model_value, example=example)
    payload = _embed({"data": data, "interactive": interactive})
    return _PAGE.format(title=html.escape(title), form=form, payload=payload, css=_CSS, js=_JS)


_CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dee7;--bg:#f6f7f9;--accent:#2f5fb3}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0}
main{max-width:1200px;margin:0 auto;padding:12px 24px 48px}
h1{font-size:20px;margin:8px 0 2px}
h2{font-size:13px;margin:26px 0 8px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted)}
.sub{color:var(--muted);margin:0 0 6px}
.query{font-size:16px;margin:6px 0}
.query b{color:var(--muted);font-weight:500}
.bar{display:flex;height:68px;border:1px solid var(--line);border-radius:6px;overflow:hidden;background:#fff}
.block{flex:1 1 0;display:flex;flex-direction:column;justify-content:center;align-items:center;min-width:4px;
  border-right:2px solid #fff;overflow:hidden;white-space:nowrap;font-size:12px;color:#111}
.block .n{font-weight:700}.block .s{font-size:11px;opacity:.75}
.block.overhead{background:repeating-linear-gradient(45deg,#c9cdd5 0 4px,#e1e4ea 4px 8px);color:#333}
.block.free{background:#fff;color:var(--muted);border-right:0}
.axis{display:flex;justify-content:space-between;color:var(--muted);font-size:12px;margin-top:4px}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin-top:8px;font-size:12px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:5px;vertical-align:-2px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line)}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#eef1f5;font-weight:600;font-size:12px}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.zbar{height:10px;background:#7aa2e3;border-radius:2px;min-width:1px}
.zbar.documents{background:#3f9b6b}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:0 24px}
@media (max-width:900px){.grid{grid-template-columns:1fr}}
pre.ctx{background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px;white-space:pre-wrap;
  word-break:break-word;font:12.5px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;margin:0}
.seg{display:block;border-left:5px solid;padding:0 70px 0 8px;margin:3px 0;position:relative}
.seg::before{content:attr(data-label);position:absolute;right:4px;top:1px;font:700 11px system-ui,sans-serif;
  background:#1d2330;color:#fff;border-radius:3px;padding:0 5px}
.reason{font:12px ui-monospace,monospace;background:#fde8e8;color:#8a1c1c;padding:1px 5px;border-radius:3px}
.chunktext{max-width:620px;white-space:pre-wrap;word-break:break-word}
.muted{color:var(--muted)}
ol.cites{background:#fff;border:1px solid var(--line);border-radius:6px;margin:0;padding:8px 12px 8px 36px}
ol.cites li{margin:4px 0}
form{background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px;display:grid;
  grid-template-columns:2fr 1fr;gap:12px}
form label{display:block;font-size:12px;color:var(--muted);margin-bottom:2px}
form textarea{width:100%;height:260px;font:12px/1.4 ui-monospace,monospace}
form input,form select{width:100%;padding:4px 6px;font:inherit}
.opts{display:grid;grid-template-columns:1fr 1fr;gap:8px;align-content:start}
.opts .wide{grid-column:1 / -1}
button{background:var(--accent);color:#fff;border:0;border-radius:4px;padding:7px 16px;font:600 14px system-ui;cursor:pointer}
.error{background:#fde8e8;border:1px solid #f0b4b4;color:#7a1515;border-radius:6px;padding:8px 12px;margin-top:12px;white-space:pre-wrap}
.status{color:var(--muted);font-size:12px;align-self:center}
.msg{background:#fff;border:1px solid var(--line);border-radius:6px;margin:0 0 8px;padding:6px 12px}
.msg .role{font:700 11px system-ui,sans-serif;text-transform:uppercase;letter-spacing:.05em;color:var(--muted)}
.msg pre{white-space:pre-wrap;word-break:break-word;font:12.5px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
  margin:4px 0 0;max-height:320px;overflow:auto}
"""

_FORM = """
<form id="cw-form" autocomplete="off">
  <div>
    <label for="cw-chunks">Chunks JSON (a list of chunks, or {{"query", "chunks"}})</label>
    <textarea id="cw-chunks" spellcheck="false">{example}</textarea>
  </div>
  <div class="opts">
    <div class="wide"><label for="cw-query">Query</label>
      <input id="cw-query" value="Who discovered X-rays?"></div>
    <div><label for="cw-preset">Preset</label><select id="cw-preset">{presets}</select></div>
    <div><label for="cw-budget">Budget (tokens)</label>
      <input id="cw-budget" type="number" min="0" value="{budget}"></div>
    <div><label for="cw-model">Model (optional)</label><input id="cw-model" value="{model}"
      placeholder="gpt-4o-mini"></div>
    <div><label for="cw-tokenizer">Tokenizer (optional)</label><input id="cw-tokenizer"
      placeholder="cl100k_base"></div>
    <div><label for="cw-format">Format</label><select id="cw-format">
      <option value="">(preset's)</option><option>xml</option><option>numbered</option>
      <option>sources</option><option>markdown</option><option>grouped</option><option>minimal</option>
    </select></div>
    <div><label for="cw-order">Order</label><select id="cw-order">
      <option value="">(preset's)</option><option>relevance</option><option>bookend</option>
      <option>lost_in_the_middle</option><option>chronological</option><option>document</option>
      <option>auto</option></select></div>
    <div><button id="cw-submit" type="submit">Assemble</button></div>
    <div id="cw-status" class="status"></div>
  </div>
</form>
"""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src data:">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<main>
<h1>{title}</h1>
<p class="sub">What the model reads: blocks sized by tokens, coloured by document, with what was left out and why.</p>
{form}
<div id="cw-error" class="error" role="alert" hidden></div>
<section id="cw-result" hidden>
  <p class="query" id="cw-query-line"></p>
  <p class="sub" id="cw-summary"></p>
  <h2>Context window</h2>
  <div id="cw-bar" class="bar"></div>
  <div class="axis"><span>0</span><span id="cw-axis"></span></div>
  <div id="cw-legend" class="legend"></div>
  <div class="grid">
    <div><h2>Tokens per zone</h2><table id="cw-zones"></table></div>
    <div><h2>Stages</h2><table id="cw-stages"></table></div>
  </div>
  <h2>Dropped chunks</h2>
  <table id="cw-dropped"></table>
  <h2>Rendered context</h2>
  <pre id="cw-text" class="ctx"></pre>
  <h2>Citations</h2>
  <ol id="cw-citations" class="cites"></ol>
  <div id="cw-chat" hidden>
    <h2>Chat sent to the model</h2>
    <div id="cw-messages"></div>
    <div id="cw-reask" hidden>
      <h2>Sent again after a bare citation</h2>
      <p class="sub">When the reply is a citation label and no answer (a bare <code>[1]</code>), the same chat
      is sent once more with these messages changed (what <code>contextwright.ask</code> does).</p>
      <div id="cw-reask-messages"></div>
    </div>
  </div>
</section>
</main>
<script type="application/json" id="cw-data">{payload}</script>
<script>{js}</script>
</body>
</html>
"""

# Built with createElement/textContent only: retrieved text never becomes markup.
_JS = r"""
(function () {
"use strict";
var $ = function (id) { return document.getElementById(id); };
function el(tag, attrs) {
  var e = document.createElement(tag);
  if (attrs) {
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined) return;
      if (k === "class") e.className = v;
      else if (k === "style") Object.keys(v).forEach(function (s) { e.style[s] = v[s]; });
      else if (k === "text") e.textContent = String(v);
      else e.setAttribute(k, String(v));
    });
  }
  for (var i = 2; i < arguments.length; i++) {
    var kid = arguments[i];
    if (kid === null || kid === undefined) continue;
    e.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
function fmt(n) { return (n === null || n === undefined) ? "–" : Number(n).toLocaleString("en-US"); }
function score(s) { return (typeof s === "number") ? s.toFixed(3) : ""; }
function cut(t, n) { t = String(t || ""); return t.length > n ? t.slice(0, n - 1) + "…" : t; }

var palette = {};
function colour(key) {
  if (!(key in palette)) {
    var i = Object.keys(palette).length;
    palette[key] = "hsl(" + Math.round((i * 137.508) % 360) + " 62% 74%)";
  }
  return palette[key];
}
function docKey(row) { return row.doc_id || row.id; }
function row(cells, head) {
  var tr = el("tr");
  cells.forEach(function (c) {
    var cls = (c && c.num) ? "num" : null;
    var v = (c && typeof c === "object" && !(c instanceof Node) && "v" in c) ? c.v : c;
    tr.appendChild(el(head ? "th" : "td", { "class": cls }, v));
  });
  return tr;
}

function render(data) {
  palette = {};
  var r = data.report;
  var blocks = data.blocks || [];
  var inputs = {};
  (data.inputs || []).forEach(function (c) { inputs[c.id] = c; });
  blocks.forEach(function (b) { colour(docKey(b)); });

  var q = clear($("cw-query-line"));
  q.appendChild(el("b", null, "Query: "));
  q.appendChild(document.createTextNode(data.query || "(none)"));
  var opts = data.options || {};
  var bits = Object.keys(opts).filter(function (k) { return opts[k] !== null && opts[k] !== undefined && opts[k] !== ""; })
    .map(function (k) { return k + " " + (typeof opts[k] === "object" ? JSON.stringify(opts[k]) : opts[k]); });
  $("cw-summary").textContent = r.summary + " · tokenizer " + data.tokenizer + (bits.length ? " · " + bits.join(" · ") : "");

  // the window: blocks, then the format's own tokens, then what is left of the budget
  var bar = clear($("cw-bar"));
  var used = 0;
  blocks.forEach(function (b) {
    used += b.tokens;
    var tip = b.label + " " + (b.title || b.doc_id || b.id) + "\nscore " + score(b.score) + " · " + b.tokens +
      " tokens\nchunks: " + b.chunk_ids.join(", ") + (b.ops.length ? "\nops: " + b.ops.join(", ") : "");
    bar.appendChild(el("div", { "class": "block", "title": tip, "data-index": b.index,
        style: { flexGrow: String(Math.max(b.tokens, 1)), background: colour(docKey(b)) } },
      el("span", { "class": "n" }, b.label), el("span", { "class": "s" }, score(b.score)),
      el("span", { "class": "s" }, b.tokens + " tok")));
  });
  var overhead = Math.max(0, data.tokens - used);
  if (overhead > 0) {
    bar.appendChild(el("div", { "class": "block overhead", title: "format overhead: " + overhead +
      " tokens (frame, document headers, separators)", style: { flexGrow: String(overhead) } }, ""));
  }
  var free = Math.max(0, data.budget - data.tokens);
  if (free > 0) {
    bar.appendChild(el("div", { "class": "block free", title: "unused budget: " + free + " tokens",
      style: { flexGrow: String(free) } }, el("span", { "class": "s" }, fmt(free) + " free")));
  }
  $("cw-axis").textContent = fmt(data.tokens) + " of " + fmt(data.budget) + " tokens";
  var legend = clear($("cw-legend"));
  var seen = {};
  blocks.forEach(function (b) {
    var k = docKey(b);
    if (seen[k]) return;
    seen[k] = true;
    legend.appendChild(el("span", null, el("span", { "class": "swatch", style: { background: colour(k) } }),
      (b.title ? b.title + " " : "") + "(" + k + ")"));
  });
  if (overhead > 0) legend.appendChild(el("span", null, el("span", { "class": "swatch block overhead" }), "format overhead"));

  // zones
  var zones = clear($("cw-zones"));
  zones.appendChild(row(["zone", { v: "tokens", num: true }, ""], true));
  zones.firstChild.lastChild.style.width = "45%";
  var z = r.zones || {};
  // with an explicit budget only "documents" is set; zero zones would only be noise
  var names = Object.keys(z).filter(function (n) { return z[n] > 0 || n === "documents"; });
  if (!names.length) { z = { documents: data.budget }; names = ["documents"]; }
  var top = Math.max.apply(null, names.map(function (n) { return z[n]; }).concat([1]));
  names.forEach(function (n) {
    var w = el("div", { "class": "zbar" + (n === "documents" ? " documents" : ""), style: { width: (100 * z[n] / top) + "%" } });
    zones.appendChild(row([n, { v: fmt(z[n]), num: true }, w]));
  });
  zones.appendChild(row(["used by the context", { v: fmt(data.tokens), num: true }, ""]));

  // stages
  var st = clear($("cw-stages"));
  st.appendChild(row(["stage", { v: "chunks", num: true }, { v: "tokens", num: true }, { v: "dropped", num: true }, { v: "ms", num: true }], true));
  r.stages.forEach(function (s) {
    st.appendChild(row([s.stage, { v: s.chunks_in + " → " + s.chunks_out, num: true },
      { v: fmt(s.tokens_in) + " → " + fmt(s.tokens_out), num: true }, { v: s.dropped.length, num: true },
      { v: s.ms.toFixed(2), num: true }]));
  });

  // dropped
  var dt = clear($("cw-dropped"));
  dt.appendChild(row(["chunk", "stage", "reason", { v: "score", num: true }, "text"], true));
  var count = 0;
  r.stages.forEach(function (s) {
    s.dropped.forEach(function (d) {
      count++;
      var src = inputs[d.chunk_id] || {};
      var why = el("span", null, el("span", { "class": "reason" }, d.reason),
        d.related ? " → " + d.related : "", d.detail ? el("div", { "class": "muted" }, d.detail) : null);
      var tr = row([el("span", null, el("span", { "class": "swatch", style: { background: colour(src.doc_id || d.chunk_id) } }), d.chunk_id),
        s.stage, why, { v: score(src.score), num: true },
        el("div", { "class": "chunktext", title: src.text || "" }, src.text === undefined ? "(not an input chunk: added by a stage, e.g. an expanded neighbour)" : cut(src.text, 400))]);
      tr.className = "dropped";
      dt.appendChild(tr);
    });
  });
  if (!count) dt.appendChild(row([{ v: "nothing was dropped" }, "", "", "", ""]));

  // the rendered context, each block marked with its label
  var pre = clear($("cw-text"));
  var text = data.text || "";
  var pos = 0;
  blocks.slice().filter(function (b) { return b.start !== null && b.start !== undefined; })
    .sort(function (a, b) { return a.start - b.start; })
    .forEach(function (b) {
      if (b.start < pos) return;
      if (b.start > pos) pre.appendChild(document.createTextNode(text.slice(pos, b.start)));
      pre.appendChild(el("span", { "class": "seg", "data-label": b.label, style: { borderColor: colour(docKey(b)) } },
        text.slice(b.start, b.end)));
      pos = b.end;
    });
  if (pos < text.length) pre.appendChild(document.createTextNode(text.slice(pos)));

  var cl = clear($("cw-citations"));
  (data.citations || []).forEach(function (c) {
    var where = [c.title, c.doc_id, c.source, c.section, c.page !== null ? "p. " + c.page : null]
      .filter(function (x) { return x !== null && x !== undefined && x !== ""; }).join(" · ");
    cl.appendChild(el("li", { value: c.index }, el("b", null, c.label + " "), where + " · score " + score(c.score),
      el("div", { "class": "muted" }, c.snippet)));
  });
  renderChat(data.messages, data.reask_messages);
  $("cw-result").hidden = false;
  document.body.setAttribute("data-rendered", String(Date.now()));
}

// the chat: each message's role and text; of the re-ask, only the messages it changes
function message(m, i) {
  return el("div", { "class": "msg", "data-index": i }, el("div", { "class": "role" }, m.role),
    el("pre", null, m.content));
}
function renderChat(messages, reask) {
  var box = clear($("cw-messages")), again = clear($("cw-reask-messages"));
  $("cw-chat").hidden = !messages;
  $("cw-reask").hidden = !(messages && reask);
  if (!messages) return;
  messages.forEach(function (m, i) { box.appendChild(message(m, i)); });
  (reask || []).forEach(function (m, i) {
    var same = messages[i] && messages[i].role === m.role && messages[i].content === m.content;
    if (!same || reask.length !== messages.length) again.appendChild(message(m, i));
  });
}

function showError(msg) {
  var e = $("cw-error"); e.textContent = msg; e.hidden = !msg;
  // A failed request leaves no stale result on screen that reads as its answer.
  if (msg && $("cw-result")) { $("cw-result").hidden = true; clear($("cw-text")); clear($("cw-bar")); }
}

function setup() {
  var form = $("cw-form");
  if (!form) return;
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    showError("");
    var parsed;
    try { parsed = JSON.parse($("cw-chunks").value); }
    catch (err) { showError("Chunks JSON does not parse: " + err.message); return; }
    var query = $("cw-query").value;
    var chunks = parsed;
    if (!Array.isArray(parsed)) {
      if (parsed && Array.isArray(parsed.chunks)) {
        chunks = parsed.chunks;
        if (!query) query = parsed.query || parsed.question || "";
      } else { showError("Paste a JSON list of chunks, or an object with a \"chunks\" list."); return; }
    }
    var body = { query: query, chunks: chunks, inspect: true, messages: true };
    var budget = $("cw-budget").value.trim();
    if (budget !== "") body.budget = parseInt(budget, 10);
    [["preset", "cw-preset"], ["model", "cw-model"], ["tokenizer", "cw-tokenizer"], ["format", "cw-format"],
     ["order", "cw-order"]].forEach(function (p) { var v = $(p[1]).value.trim(); if (v) body[p[0]] = v; });
    var t0 = performance.now();
    $("cw-status").textContent = "assembling…";
    fetch("v1/assemble", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
      .then(function (res) {
        return res.json().catch(function () { return null; }).then(function (out) { return [res, out]; });
      })
      .then(function (pair) {
        var res = pair[0], out = pair[1];
        var ms = Math.round(performance.now() - t0);
        if (!res.ok || !out) {
          $("cw-status").textContent = res.status + " in " + ms + " ms";
          var p = out || {};
          showError((p.title || ("HTTP " + res.status)) + ": " + (p.detail || "no detail") +
            (p.loc ? "\nat " + p.loc.join(".") : ""));
          return;
        }
        out.options = { preset: body.preset, budget: body.budget, model: body.model, format: body.format, order: body.order };
        render(out);
        $("cw-status").textContent = "200 in " + ms + " ms";
      })
      .catch(function (err) { showError("Request failed: " + err); });
  });
}

var boot = JSON.parse($("cw-data").textContent);
setup();
if (boot.data) render(boot.data);
})();
"""
