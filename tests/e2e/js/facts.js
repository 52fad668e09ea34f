// What the desktop tests read from a loaded page, in one pass. Returns plain data.
() => {
  const article = document.querySelector("article.md-content__inner") || document.body
  const SKIP = "pre, code, script, style, svg, textarea, noscript, template, .md-search"
  const RAW_TEX = /\$\$|\\frac|\\\(|\\\)|\\\[|\\\]|\\begin\{|\\(?:sqrt|operatorname|mathbb|mathrm|text|top|cdot|sum|left|right)\b|\$[^$\s][^$\n]{0,80}\$/

  // Text of the page outside code and math, with where it sits.
  function textNodes(root) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: n => (n.parentElement && n.parentElement.closest(SKIP))
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
    })
    const nodes = []
    while (walker.nextNode()) nodes.push(walker.currentNode)
    return nodes
  }
  function where(el) {
    const parts = []
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement) {
      parts.unshift(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
        (e.classList.length ? "." + [...e.classList].slice(0, 2).join(".") : ""))
    }
    return parts.join(" > ")
  }

  const rawTex = []
  for (const node of textNodes(document.body)) {
    const m = node.textContent.match(RAW_TEX)
    if (m) rawTex.push(`${where(node.parentElement)}: …${node.textContent.slice(Math.max(0, m.index - 20), m.index + 40).trim()}…`)
  }

  // Formulas: every arithmatex element holds an SVG of non-zero size.
  const math = []
  const mathProblems = []
  for (const el of document.querySelectorAll(".arithmatex")) {
    const svg = el.querySelector(":scope > svg")
    if (!svg) { mathProblems.push(`${where(el)}: no SVG: ${el.textContent.slice(0, 60)}`); continue }
    const label = svg.getAttribute("aria-label") || ""
    const rect = svg.getBoundingClientRect()
    const shown = svg.checkVisibility()
    // Hidden ones (closed <details>, other tabs) are measured by their own size attributes.
    const size = shown ? [rect.width, rect.height]
      : [parseFloat(svg.getAttribute("width")), parseFloat(svg.getAttribute("height"))]
    math.push({ label, shown, size })
    if (!(size[0] > 0 && size[1] > 0) || !svg.querySelector("use, path"))
      mathProblems.push(`${where(el)}: zero size or empty: ${label}`)
  }

  const images = [...document.images].map(img => ({
    src: img.getAttribute("src"),
    alt: img.getAttribute("alt"),
    complete: img.complete,
    naturalWidth: img.naturalWidth,
    inArticle: article.contains(img),
  }))

  // Code blocks and their copy buttons.
  const code = [...document.querySelectorAll(".highlight pre > code")].map(c => {
    const pre = c.parentElement
    const button = pre.id
      ? document.querySelector(`[data-clipboard-target="#${CSS.escape(pre.id)} > code"]`)
      : null
    return { target: pre.id ? `#${pre.id} > code` : null, hasButton: !!button, text: c.textContent }
  })

  // The article's prose (not code, not math, not the API's generated docstrings).
  const prose = textNodes(article)
    .filter(n => !n.parentElement.closest(".doc-contents, .doc-signature, .headerlink"))
    .map(n => n.textContent).join(" ").replace(/\s+/g, " ").trim()

  return {
    lang: document.documentElement.getAttribute("lang"),
    title: document.title,
    h1: (article.querySelector("h1") || {}).textContent || "",
    rawTex, math, mathProblems, images, code, prose,
  }
}
