// At phone width: does the page scroll sideways, and does every wide block scroll in its own box?
() => {
  const width = window.innerWidth
  const problems = []
  const scrolls = e => /auto|scroll/.test(getComputedStyle(e).overflowX)
  const fits = e => {
    const r = e.getBoundingClientRect()
    return r.left >= -1 && r.right <= width + 1
  }
  function describe(el) {
    return el.tagName.toLowerCase() + [...el.classList].map(c => "." + c).join("") +
      ` (${Math.round(el.scrollWidth)}px): ` + el.textContent.trim().slice(0, 50)
  }
  let wide = 0
  for (const el of document.querySelectorAll(
    "article table, article pre > code, article div.arithmatex, article .tabbed-labels")) {
    if (!el.checkVisibility()) continue
    if (fits(el) && el.scrollWidth <= el.clientWidth + 1) continue
    wide++
    // Wider than the screen or than itself: some box around it (itself included) that fits
    // the screen must scroll sideways.
    let box = el
    while (box && box !== document.body && !(scrolls(box) && fits(box))) box = box.parentElement
    if (!box || box === document.body) problems.push(`${describe(el)} sticks out and does not scroll in a box of its own`)
  }
  return { innerWidth: width, scrollWidth: document.scrollingElement.scrollWidth, wide, problems }
}
