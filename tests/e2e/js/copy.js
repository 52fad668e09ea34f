// Get copy button `i` ready for a reader's click: open its <details>, select its content tab,
// scroll it into view, empty the clipboard. Returns the code it belongs to (and, for package
// code, the number of the page's include block) and where to click.
async i => {
  const button = document.querySelectorAll("[data-clipboard-target]")[i]
  for (let e = button; e; e = e.parentElement) {
    if (e.tagName === "DETAILS" && !e.open) e.open = true
    if (e.classList && e.classList.contains("tabbed-block")) {
      const blocks = [...e.parentElement.children]
      const input = e.closest(".tabbed-set").querySelectorAll(":scope > input")[blocks.indexOf(e)]
      if (input && !input.checked) input.click()
    }
  }
  button.scrollIntoView({ block: "center", behavior: "instant" })
  await navigator.clipboard.writeText("")
  const target = button.getAttribute("data-clipboard-target")
  const rect = button.getBoundingClientRect()
  const source = button.closest("[class*=source-include-]")
  const included = source && source.className.match(/\bsource-include-(\d+)\b/)
  return {
    target,
    text: document.querySelector(target).textContent,
    include: included ? Number(included[1]) : null,
    x: rect.left + rect.width / 2,
    y: rect.top + rect.height / 2,
  }
}
