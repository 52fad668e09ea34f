/* Accessibility fixes for what axe-core (tests/e2e) finds in Material's pages:
   - the search dialog has no name: give it the search box's own label ("Search", "搜索");
   - a display formula wider than the column scrolls sideways, so keyboard users must be able
     to focus it (Material does the same for code blocks). */
(function () {
  "use strict"

  var dialog = document.querySelector(".md-search[role=dialog]")
  var input = document.querySelector(".md-search__input")
  if (dialog && input && !dialog.hasAttribute("aria-label"))
    dialog.setAttribute("aria-label", input.getAttribute("aria-label") || input.placeholder)

  function focusableIfScrolling(entries) {
    entries.forEach(function (entry) {
      var el = entry.target
      if (el.scrollWidth > el.clientWidth + 1) el.setAttribute("tabindex", "0")
      else el.removeAttribute("tabindex")
    })
  }
  if (typeof ResizeObserver !== "undefined") {
    var observer = new ResizeObserver(focusableIfScrolling)
    document.querySelectorAll("div.arithmatex").forEach(function (el) { observer.observe(el) })
  }
})()
