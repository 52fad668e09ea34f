/* The attention explorer: a heatmap of attention weights to point at, in the page's language.

   Where a page holds <div class="attention-explorer">, this script loads explorer/attention.json
   (next to this script's folder; written at build time by docs_hooks/hooks/explorer.py from
   attention_ref.lab.attention_maps) and replaces the static figure inside the div, which
   readers without JavaScript see, with: controls (view, layer, head, colour scale, mask, table),
   a description with links to the code, the heatmap (hand-written SVG, queries down the
   side, keys along the top, each row's sum on the right), a live readout of the selected cell
   and its row, and the same numbers as a table (visually hidden until asked for).

   Hover over or tap a cell to select it; the heatmap is a Tab stop whose arrow keys move
   the selection. Colours follow Material's palette (data-md-color-scheme). No library, no
   request to another host. */
(function () {
  "use strict"

  var script = document.currentScript
  var DATA_URL = new URL("../explorer/attention.json", script ? script.src : location.href)
  var SVG = "http://www.w3.org/2000/svg"
  var CELL = 50, GAP = 2, LOG_FLOOR = 1e-4
  // Colour stops from weight 0 to weight 1: matplotlib's "Blues" (the site's figures) in the
  // light palette; in the dark one, from the page's background to a light blue.
  var STOPS = {
    light: ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"],
    dark: ["#1e2130", "#1d2c4a", "#1f4068", "#245c8c", "#2f7bb3", "#4a9bd6", "#7db9e8", "#b5d7f3", "#eef6fd"]
  }
  var counter = 0

  function el(tag, attrs, children) {
    var node = tag.indexOf("svg:") === 0
      ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag)
    Object.keys(attrs || {}).forEach(function (name) {
      var value = attrs[name]
      if (value === false || value === null || value === undefined) return
      if (name === "text") node.textContent = value
      else node.setAttribute(name, value === true ? "" : value)
    })
    ;(children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child)
    })
    return node
  }

  function format(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, key) { return values[key] })
  }

  function hexToRgb(hex) {
    var n = parseInt(hex.slice(1), 16)
    return [(n >> 16) & 255, (n >> 8) & 255, n & 255]
  }

  function colour(t, palette) {
    var stops = STOPS[palette], x = Math.min(1, Math.max(0, t)) * (stops.length - 1)
    var i = Math.min(stops.length - 2, Math.floor(x)), f = x - i
    var a = hexToRgb(stops[i]), b = hexToRgb(stops[i + 1])
    var rgb = a.map(function (v, k) { return Math.round(v + (b[k] - v) * f) })
    return { fill: "rgb(" + rgb.join(",") + ")", luminance: (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255 }
  }

  function scaled(weight, scale) {
    if (scale !== "log") return weight
    return (Math.log10(Math.max(weight, LOG_FLOOR)) - Math.log10(LOG_FLOOR)) / -Math.log10(LOG_FLOOR)
  }

  function palette() {
    return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "light"
  }

  function Explorer(root, data, text) {
    this.root = root
    this.data = data
    this.text = text
    this.id = "ae" + (++counter)
    this.state = { view: 0, layer: 0, head: 0, scale: "linear", mask: true, table: false, q: 0, k: 0 }
    this.build()
    this.render()
  }

  Explorer.prototype.view = function () { return this.data.views[this.state.view] }

  Explorer.prototype.matrix = function () {
    var view = this.view()
    return view.layers[this.state.layer][this.state.head]
  }

  Explorer.prototype.label = function (tokens, i) {
    var token = tokens[i]
    var repeated = tokens.indexOf(token) !== tokens.lastIndexOf(token)
    return repeated ? token + " (" + i + ")" : token
  }

  Explorer.prototype.headLabel = function (view, h) {
    var t = this.text
    if (view.slopes) return format(t.slope, { n: h + 1, d: view.slopes[h] })
    return format(t.head_n, { n: h + 1 })
  }

  Explorer.prototype.build = function () {
    var t = this.text, self = this, id = this.id
    var viewSelect = el("select", { id: id + "-view", "class": "ae-view" })
    var groups = {}
    this.data.views.forEach(function (view, i) {
      if (!groups[view.group]) {
        groups[view.group] = el("optgroup", { label: t[view.group] })
        viewSelect.appendChild(groups[view.group])
      }
      groups[view.group].appendChild(el("option", { value: i, text: t.views[view.id] }))
    })
    var layerSelect = el("select", { id: id + "-layer", "class": "ae-layer" })
    var headSelect = el("select", { id: id + "-head", "class": "ae-head" })
    var scaleName = id + "-scale"
    var linear = el("input", { type: "radio", name: scaleName, value: "linear", id: id + "-linear", checked: true })
    var log = el("input", { type: "radio", name: scaleName, value: "log", id: id + "-log" })
    var mask = el("input", { type: "checkbox", id: id + "-mask", "class": "ae-mask", checked: true })
    var table = el("input", { type: "checkbox", id: id + "-table", "class": "ae-table-toggle" })
    var controls = el("div", { "class": "ae-controls" }, [
      el("div", { "class": "ae-field ae-field--view" }, [el("label", { "for": viewSelect.id, text: t.view }), viewSelect]),
      el("div", { "class": "ae-field" }, [el("label", { "for": layerSelect.id, text: t.layer }), layerSelect]),
      el("div", { "class": "ae-field" }, [el("label", { "for": headSelect.id, text: t.head }), headSelect]),
      el("fieldset", { "class": "ae-field ae-scale" }, [
        el("legend", { text: t.scale }),
        el("span", { "class": "ae-choice" }, [linear, el("label", { "for": linear.id, text: t.linear })]),
        el("span", { "class": "ae-choice" }, [log, el("label", { "for": log.id, text: t.log })])
      ]),
      el("div", { "class": "ae-field ae-checks" }, [
        el("span", { "class": "ae-choice" }, [mask, el("label", { "for": mask.id, text: t.mask })]),
        el("span", { "class": "ae-choice" }, [table, el("label", { "for": table.id, text: t.table })])
      ])
    ])
    this.about = el("p", { "class": "ae-about", id: id + "-about" })
    this.help = el("p", { "class": "ae-help", id: id + "-help", text: t.help })
    this.map = el("div", {
      "class": "ae-map", tabindex: "0", role: "group", id: id + "-map",
      "aria-roledescription": t.heatmap,
      "aria-describedby": id + "-about " + id + "-help"
    })
    this.readout = el("p", { "class": "ae-readout", id: id + "-readout", "aria-live": "polite", "aria-atomic": "true" })
    this.rowText = el("p", { "class": "ae-row", id: id + "-row" })
    // The table scrolls in its own box when shown; until then it is there for screen readers only.
    this.tableInner = el("div", { "class": "ae-visually-hidden" })
    this.tableBox = el("div", { "class": "ae-table-box", id: id + "-table-box" }, [this.tableInner])
    this.controls = { view: viewSelect, layer: layerSelect, head: headSelect, linear: linear, log: log, mask: mask, table: table }

    viewSelect.addEventListener("change", function () {
      self.state.view = Number(viewSelect.value)
      self.state.layer = 0
      self.state.head = 0
      self.clampSelection()
      self.render()
    })
    layerSelect.addEventListener("change", function () { self.state.layer = Number(layerSelect.value); self.render() })
    headSelect.addEventListener("change", function () { self.state.head = Number(headSelect.value); self.render() })
    ;[linear, log].forEach(function (input) {
      input.addEventListener("change", function () { if (input.checked) { self.state.scale = input.value; self.render() } })
    })
    mask.addEventListener("change", function () { self.state.mask = mask.checked; self.render() })
    table.addEventListener("change", function () {
      self.state.table = table.checked
      self.tableInner.classList.toggle("ae-visually-hidden", !table.checked)
    })
    this.map.addEventListener("keydown", function (ev) { self.key(ev) })
    this.map.addEventListener("focus", function () { self.select(self.state.q, self.state.k) })
    this.map.addEventListener("pointermove", function (ev) { self.point(ev) })
    this.map.addEventListener("pointerdown", function (ev) { self.point(ev) })

    this.root.setAttribute("role", "group")
    this.root.setAttribute("aria-label", t.label)
    this.root.classList.add("ae-ready")
    this.root.appendChild(controls)
    this.root.appendChild(this.about)
    this.root.appendChild(this.map)
    this.root.appendChild(this.readout)
    this.root.appendChild(this.rowText)
    this.root.appendChild(this.help)
    this.root.appendChild(this.tableBox)
  }

  Explorer.prototype.clampSelection = function () {
    var tokens = this.view().tokens
    this.state.q = Math.min(this.state.q, tokens.length - 1)
    this.state.k = Math.min(this.state.k, tokens.length - 1)
  }

  Explorer.prototype.options = function (select, count, label, value) {
    select.textContent = ""
    for (var i = 0; i < count; i++) select.appendChild(el("option", { value: i, text: label(i) }))
    select.value = String(value)
    select.disabled = count < 2
  }

  Explorer.prototype.render = function () {
    var self = this, t = this.text, view = this.view(), s = this.state
    this.controls.view.value = String(s.view)
    this.options(this.controls.layer, view.layers.length, function (i) { return format(t.layer_n, { n: i + 1 }) }, s.layer)
    this.options(this.controls.head, view.layers[s.layer].length, function (i) { return self.headLabel(view, i) }, s.head)
    this.renderAbout(view)
    this.renderMap(view)
    this.renderTable(view)
    this.select(s.q, s.k, true)
  }

  Explorer.prototype.renderAbout = function (view) {
    var t = this.text
    var about = t.about[view.about] || ""
    if (view.about === "positions") about = format(about, { name: t.encodings[view.id] })
    var more = { prefix_lm: "prefix", causal_sink_logit: "sink" }[view.id]  // a second sentence
    if (more) about += t.sentence_sep + t.about[more]
    this.about.textContent = about + (/[。）]$/.test(about) ? "" : " ")
    var code = el("span", { "class": "ae-code" }, [t.code + (t.code.slice(-1) === ":" ? " " : "")])
    view.links.forEach(function (link, i) {
      if (i) code.appendChild(document.createTextNode(t.comma))
      code.appendChild(el("a", { href: link[0] }, [el("code", { text: link[1] })]))
    })
    this.about.appendChild(code)
  }

  Explorer.prototype.renderMap = function (view) {
    var s = this.state, matrix = this.matrix(), tokens = view.tokens, L = matrix.length, S = matrix[0].length
    var pal = palette(), longest = 0
    tokens.forEach(function (tok) { longest = Math.max(longest, tok.length) })
    var left = 26 + 9 * Math.max(2, longest) + 6, top = 26 + 20, sumWidth = 52
    var width = left + S * CELL + sumWidth, height = top + L * CELL + 4
    var svg = el("svg:svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, "class": "ae-svg", "aria-hidden": "true", focusable: "false" })
    var patternId = this.id + "-hatch"
    svg.appendChild(el("svg:defs", {}, [
      el("svg:pattern", { id: patternId, width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, [
        el("svg:rect", { width: 6, height: 6, "class": "ae-hatch-bg" }),
        el("svg:line", { x1: 0, y1: 0, x2: 0, y2: 6, "class": "ae-hatch-line" })
      ])
    ]))
    svg.appendChild(el("svg:text", { x: left + (S * CELL) / 2, y: 14, "class": "ae-axis", text: this.text.keys + " →" }))
    svg.appendChild(el("svg:text", { x: 12, y: top + (L * CELL) / 2, "class": "ae-axis", transform: "rotate(-90 12 " + (top + (L * CELL) / 2) + ")", text: "← " + this.text.queries }))
    svg.appendChild(el("svg:text", { x: left + S * CELL + sumWidth / 2, y: top - 8, "class": "ae-tick ae-sum-head", text: "Σ" }))
    this.colLabels = []
    this.rowLabels = []
    for (var k = 0; k < S; k++) {
      var col = el("svg:text", { x: left + k * CELL + CELL / 2, y: top - 8, "class": "ae-tick", text: tokens[k] })
      this.colLabels.push(col)
      svg.appendChild(col)
    }
    this.cells = []
    for (var q = 0; q < L; q++) {
      var row = el("svg:text", { x: left - 8, y: top + q * CELL + CELL / 2, "class": "ae-tick ae-tick--row", text: tokens[q] })
      this.rowLabels.push(row)
      svg.appendChild(row)
      var cells = [], sum = 0
      for (k = 0; k < S; k++) {
        var w = matrix[q][k], masked = !view.mask[q][k]
        sum += w
        var x = left + k * CELL, y = top + q * CELL
        var c = colour(scaled(w, s.scale), pal)
        var showMask = masked && s.mask
        var rect = el("svg:rect", {
          x: x + GAP / 2, y: y + GAP / 2, width: CELL - GAP, height: CELL - GAP,
          fill: showMask ? "url(#" + patternId + ")" : c.fill,
          "class": "ae-cell" + (showMask ? " ae-cell--masked" : ""),
          "data-q": q, "data-k": k
        })
        svg.appendChild(rect)
        if (!showMask) {
          svg.appendChild(el("svg:text", {
            x: x + CELL / 2, y: y + CELL / 2, "class": "ae-value " + (c.luminance < 0.5 ? "ae-value--light" : "ae-value--dark"),
            text: w.toFixed(2)
          }))
        }
        cells.push(rect)
      }
      svg.appendChild(el("svg:text", { x: left + S * CELL + sumWidth / 2, y: top + q * CELL + CELL / 2, "class": "ae-tick ae-sum", text: sum.toFixed(3) }))
      this.cells.push(cells)
    }
    this.outline = el("svg:rect", { "class": "ae-outline", width: CELL, height: CELL })
    svg.appendChild(this.outline)
    this.geometry = { left: left, top: top }
    this.map.setAttribute("aria-label", this.text.grid)
    this.map.textContent = ""
    this.map.appendChild(svg)
  }

  Explorer.prototype.renderTable = function (view) {
    var t = this.text, s = this.state, matrix = this.matrix(), tokens = view.tokens
    var caption = format(t.caption, {
      view: t.views[view.id], layer: format(t.layer_n, { n: s.layer + 1 }), head: this.headLabel(view, s.head)
    })
    var head = el("tr", {}, [el("th", { scope: "col", text: t.query + " \\ " + t.key })])
    tokens.forEach(function (tok) { head.appendChild(el("th", { scope: "col", text: tok })) })
    head.appendChild(el("th", { scope: "col", text: t.sum }))
    var body = el("tbody")
    matrix.forEach(function (row, q) {
      var tr = el("tr", {}, [el("th", { scope: "row", text: tokens[q] })])
      var sum = 0
      row.forEach(function (w, k) {
        sum += w
        tr.appendChild(el("td", { text: view.mask[q][k] ? w.toFixed(3) : "—" }))
      })
      tr.appendChild(el("td", { text: sum.toFixed(3) }))
      body.appendChild(tr)
    })
    var table = el("table", { "class": "ae-table" }, [el("caption", { text: caption }), el("thead", {}, [head]), body])
    this.tableInner.textContent = ""
    this.tableInner.appendChild(table)
  }

  Explorer.prototype.select = function (q, k, quiet) {
    var t = this.text, view = this.view(), matrix = this.matrix(), tokens = view.tokens
    this.state.q = q
    this.state.k = k
    var w = matrix[q][k], values = { q: this.label(tokens, q), k: this.label(tokens, k), w: w.toFixed(3) }
    var text = view.mask[q][k] ? format(t.readout, values) : format(t.masked, values)
    var row = matrix[q], sum = 0, parts = []
    for (var j = 0; j < row.length; j++) {
      sum += row[j]
      if (view.mask[q][j]) parts.push(this.label(tokens, j) + " " + row[j].toFixed(3))
    }
    text += t.then + t.sum + " " + sum.toFixed(3)
    if (this.readout.textContent !== text) this.readout.textContent = text
    this.rowText.textContent = format(t.row, { q: this.label(tokens, q), weights: parts.join(t.comma) })
    this.readout.dataset.q = q
    this.readout.dataset.k = k
    this.readout.dataset.weight = String(w)
    var g = this.geometry
    this.outline.setAttribute("x", g.left + k * CELL)
    this.outline.setAttribute("y", g.top + q * CELL)
    this.rowLabels.forEach(function (label, i) { label.classList.toggle("ae-tick--on", i === q) })
    this.colLabels.forEach(function (label, i) { label.classList.toggle("ae-tick--on", i === k) })
    if (!quiet) this.map.setAttribute("aria-label", t.grid + t.label_sep + text)
  }

  Explorer.prototype.point = function (ev) {
    var cell = ev.target && ev.target.closest ? ev.target.closest(".ae-cell") : null
    if (!cell) return
    var q = Number(cell.getAttribute("data-q")), k = Number(cell.getAttribute("data-k"))
    if (q !== this.state.q || k !== this.state.k) this.select(q, k)
  }

  Explorer.prototype.key = function (ev) {
    var L = this.cells.length, S = this.cells[0].length, q = this.state.q, k = this.state.k
    switch (ev.key) {
      case "ArrowUp": q = Math.max(0, q - 1); break
      case "ArrowDown": q = Math.min(L - 1, q + 1); break
      case "ArrowLeft": k = Math.max(0, k - 1); break
      case "ArrowRight": k = Math.min(S - 1, k + 1); break
      case "Home": k = 0; break
      case "End": k = S - 1; break
      default: return
    }
    ev.preventDefault()
    this.select(q, k)
  }

  function start() {
    var roots = document.querySelectorAll(".attention-explorer:not(.ae-ready)")
    if (!roots.length) return
    var lang = (document.documentElement.lang || "en").slice(0, 2)
    roots.forEach(function (root) { root.setAttribute("aria-busy", "true") })
    fetch(DATA_URL.href)
      .then(function (response) {
        if (!response.ok) throw new Error("explorer: " + response.status + " for " + DATA_URL.href)
        return response.json()
      })
      .then(function (data) {
        var text = data.text[lang] || data.text.en
        roots.forEach(function (root) {
          var fallback = root.querySelectorAll(":scope > *")
          var explorer = new Explorer(root, data, text)
          fallback.forEach(function (node) { node.hidden = true })
          root.removeAttribute("aria-busy")
          new MutationObserver(function () { explorer.render() })
            .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] })
        })
      })
      .catch(function (error) {
        roots.forEach(function (root) { root.removeAttribute("aria-busy") })
        console.warn(error)  // the static figure stays
      })
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start)
  else start()
})()
