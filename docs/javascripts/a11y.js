/* Accessibility (axe-core, tests/e2e): Material's search is a dialog without a name; give it
   the search box's own label, in the page's language ("Search", "搜索"). */
(function () {
  "use strict"
  var dialog = document.querySelector(".md-search[role=dialog]")
  var input = document.querySelector(".md-search__input")
  if (dialog && input && !dialog.hasAttribute("aria-label"))
    dialog.setAttribute("aria-label", input.getAttribute("aria-label") || input.placeholder)
})()
