// Punctuation stranded at the edge of a line of running text (Chinese typesetting forbids it).
// Called with { marks, edge }:
// - edge "start", marks CLOSING_FULL_WIDTH: closing punctuation that begins a line, e.g. "。"
//   pushed onto a new line after an inline formula;
// - edge "end", marks OPENING_FULL_WIDTH: opening punctuation that ends a line, e.g. "（" left at
//   the end of a line before an inline formula.
// Both sets of characters come from docs_hooks/constants.py. Collapsed blocks are opened first.
// For each such character, its rectangle is compared with the content beside it on that side (the
// previous or next character, or the nearest box of the previous or next node: a formula's SVG,
// inline code): when the later of the two sits lower than the earlier, a line break stands
// between them.
({ marks, edge }) => {
  const forward = edge === "end" // the mark ends a line: look at what follows it
  const sibling = (node) => (forward ? node.nextSibling : node.previousSibling)
  const nearest = (rects) => (rects.length ? rects[forward ? 0 : rects.length - 1] : null)
  document.querySelectorAll("details").forEach((d) => { d.open = true })
  const root = document.querySelector(".md-content article")
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) =>
      node.parentElement.closest("pre, code, svg, script, style, .headerlink, mjx-container")
        ? NodeFilter.FILTER_REJECT
        : NodeFilter.FILTER_ACCEPT,
  })
  const nearRect = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      if (!node.textContent.trim()) return null
      const range = document.createRange()
      range.selectNodeContents(node)
      return nearest(range.getClientRects())
    }
    return nearest(node.getClientRects())
  }
  const besideContent = (node) => {
    // The nearest sibling content on that side, climbing out of inline parents only.
    for (let n = node; n && n !== root; n = n.parentNode) {
      if (n !== node && getComputedStyle(n).display !== "inline") return null
      for (let p = sibling(n); p; p = sibling(p)) {
        const rect = nearRect(p)
        if (rect && rect.width > 0) return { rect, what: p.nodeName + " " + (p.outerHTML || p.textContent).slice(0, 80) }
      }
    }
    return null
  }
  const found = []
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent
    for (let i = 0; i < text.length; i++) {
      if (!marks.includes(text[i])) continue
      const range = document.createRange()
      range.setStart(node, i)
      range.setEnd(node, i + 1)
      const here = range.getClientRects()[0]
      if (!here || here.width === 0) continue
      const j = forward ? i + 1 : i - 1 // the character beside the mark
      let beside = null
      let what = ""
      if (j >= 0 && j < text.length && text[j].trim()) {
        const character = document.createRange()
        character.setStart(node, j)
        character.setEnd(node, j + 1)
        beside = nearest(character.getClientRects())
      } else if (j === -1 || j === text.length) {
        const content = besideContent(node)
        if (content) ({ rect: beside, what } = content)
      }
      const [earlier, later] = forward ? [here, beside] : [beside, here]
      if (beside && later.top > earlier.top + earlier.height / 2) {
        const context = text.slice(Math.max(0, i - 12), i + 1)
        found.push(
          forward
            ? `${context} (line ends with "${text[i]}")${what ? ` before ${what}` : ""}`
            : `${what ? `after ${what}: ` : ""}${context} (line starts with "${text[i]}")`,
        )
      }
    }
  }
  return found
}
