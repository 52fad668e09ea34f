// Closing punctuation that begins a line of running text (Chinese typesetting forbids it), e.g.
// "。" pushed onto a new line after an inline formula. Collapsed blocks are opened first. For
// each such character, its rectangle is compared with the content just before it (the previous
// character, or the last box of the previous node: a formula's SVG, inline code): a character
// that sits lower than what precedes it starts a new line.
// CLOSING, the characters, comes from docs_hooks/constants.py (CLOSING_FULL_WIDTH).
(CLOSING) => {
  document.querySelectorAll("details").forEach((d) => { d.open = true })
  const root = document.querySelector(".md-content article")
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) =>
      node.parentElement.closest("pre, code, svg, script, style, .headerlink, mjx-container")
        ? NodeFilter.FILTER_REJECT
        : NodeFilter.FILTER_ACCEPT,
  })
  const lastRect = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      if (!node.textContent.trim()) return null
      const range = document.createRange()
      range.selectNodeContents(node)
      const rects = range.getClientRects()
      return rects.length ? rects[rects.length - 1] : null
    }
    const rects = node.getClientRects()
    return rects.length ? rects[rects.length - 1] : null
  }
  const previousContent = (node) => {
    // The nearest earlier sibling content, climbing out of inline parents only.
    for (let n = node; n && n !== root; n = n.parentNode) {
      if (n !== node && getComputedStyle(n).display !== "inline") return null
      for (let p = n.previousSibling; p; p = p.previousSibling) {
        const rect = lastRect(p)
        if (rect && rect.width > 0) return { rect, what: p.nodeName + " " + (p.outerHTML || p.textContent).slice(0, 80) }
      }
    }
    return null
  }
  const found = []
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent
    for (let i = 0; i < text.length; i++) {
      if (!CLOSING.includes(text[i])) continue
      const range = document.createRange()
      range.setStart(node, i)
      range.setEnd(node, i + 1)
      const here = range.getClientRects()[0]
      if (!here || here.width === 0) continue
      let before = null
      let what = ""
      if (i > 0 && text[i - 1].trim()) {
        const previous = document.createRange()
        previous.setStart(node, i - 1)
        previous.setEnd(node, i)
        const rects = previous.getClientRects()
        before = rects[rects.length - 1] || null
      } else if (i === 0) {
        const previous = previousContent(node)
        if (previous) ({ rect: before, what } = previous)
      }
      if (before && here.top > before.top + before.height / 2) {
        const context = text.slice(Math.max(0, i - 12), i + 1)
        found.push(`${what ? `after ${what}: ` : ""}${context} (line starts with "${text[i]}")`)
      }
    }
  }
  return found
}
