// In the dark palette: the colour of each formula against what is behind it, and each figure's panel.
() => {
  function rgba(css) {
    const m = css.match(/rgba?\(([^)]+)\)/)
    if (!m) return null
    const [r, g, b, a = 1] = m[1].split(/[\s,/]+/).filter(Boolean).map(Number)
    return { r, g, b, a }
  }
  function luminance({ r, g, b }) {
    const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4 }
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)
  }
  function contrast(a, b) {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x)
    return (hi + 0.05) / (lo + 0.05)
  }
  function background(el) {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor)
      if (c && c.a > 0.5) return c
    }
    return { r: 255, g: 255, b: 255, a: 1 }
  }
  const scheme = document.body.getAttribute("data-md-color-scheme")
  const page = background(document.querySelector(".md-main") || document.body)
  const math = []
  for (const svg of document.querySelectorAll(".arithmatex > svg")) {
    if (!svg.checkVisibility()) continue
    // A drawn glyph (the paths under <defs> are only templates for <use>).
    const glyph = svg.querySelector(":scope > g :is(use, path, rect)") || svg
    const fill = rgba(getComputedStyle(glyph).fill) || rgba(getComputedStyle(svg).color)
    const bg = background(svg.parentElement)
    math.push({ label: svg.getAttribute("aria-label"), fill, bg, contrast: contrast(fill, bg) })
  }
  const figures = []
  for (const img of document.querySelectorAll("article img")) {
    const bg = rgba(getComputedStyle(img).backgroundColor) || { r: 0, g: 0, b: 0, a: 0 }
    figures.push({ src: img.getAttribute("src"), bg, luminance: bg.a > 0.99 ? luminance(bg) : 0 })
  }
  return { scheme, pageLuminance: luminance(page), math, figures }
}
