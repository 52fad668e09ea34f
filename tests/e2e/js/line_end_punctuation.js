// Opening punctuation that ends a line of running text (Chinese typesetting forbids it), e.g.
// "（" left at the end of a line before an inline formula. Collapsed blocks are opened first. For
// each such character, its rectangle is compared with the content just after it (the next
// character, or the first box of the next node: a formula's SVG, inline code): content that
// sits lower than the character starts a new line, so the character ended the line before.
// OPENING, the characters, comes from docs_hooks/constants.py (OPENING_FULL_WIDTH).
(OPENING) => {
  document.querySelectorAll("details").forEach((d) => { d.open = true })
  const root = document.querySelector(".md-content article")
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) =>
      node.parentElement.closest("pre, code, svg, script, style, .headerlink, mjx-container")
        ? NodeFilter.FILTER_REJECT
        : NodeFilter.FILTER_ACCEPT,
  })
  const firstRect = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      if (!node.textContent.trim()) return null
      const range = document.createRange()
      range.selectNodeContents(node)
      const rects = range.getClientRects()
      return rects.length ? rects[0] : null
    }
    const rects = node.getClientRects()
    return rects.length ? rects[0] : null
  }
  const nextContent = (node) => {
    // The nearest later sibling content, climbing out of inline parents only.
    for (let n = node; n && n !== root; n = n.parentNode) {
      if (n !== node && getComputedStyle(n).display !== "inline") return null
      for (let p = n.nextSibling; p; p = p.nextSibling) {
        const rect = firstRect(p)
        if (rect && rect.width > 0) return { rect, what: p.nodeName + " " + (p.outerHTML || p.textContent).slice(0, 80) }
      }
    }
    return null
  }
  const found = []
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent
    for (let i = 0; i < text.length; i++) {
      if (!OPENING.includes(text[i])) continue
      const range = document.createRange()
      range.setStart(node, i)
      range.setEnd(node, i + 1)
      const here = range.getClientRects()[0]
      if (!here || here.width === 0) continue
      let after = null
      let what = ""
      if (i + 1 < text.length && text[i + 1].trim()) {
        const next = document.createRange()
        next.setStart(node, i + 1)
        next.setEnd(node, i + 2)
        after = next.getClientRects()[0] || null
      } else if (i + 1 === text.length) {
        const next = nextContent(node)
        if (next) ({ rect: after, what } = next)
      }
      if (after && after.top > here.top + here.height / 2) {
        const context = text.slice(Math.max(0, i - 12), i + 1)
        found.push(`${context} (line ends with "${text[i]}")${what ? ` before ${what}` : ""}`)
      }
    }
  }
  return found
}
