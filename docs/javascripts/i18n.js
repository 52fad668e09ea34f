/* The two languages, as a reader expects them:
   - The language menu goes straight to its link, which mkdocs-static-i18n points at this page
     in the other language. (Material's own handler looks the page up in the sitemap and, when
     that fails, e.g. for a site served on a port of its own, lands on the other home page.)
   - The head's hreflang links, hidden from Material's script while it starts (see
     docs_hooks/hooks/i18n_fixes.py), are put back once it has.
   - Search lists the pages of the reader's language first. The index holds both languages,
     and Material orders results by score alone, so "softmax" would mix both. */
(function () {
  "use strict"

  document.addEventListener("click", function (ev) {
    var target = ev.target instanceof Element ? ev.target : null
    if (target && target.closest(".md-select__link[hreflang]"))
      ev.stopPropagation()  // the browser follows the link; Material's handler does not run
  }, true)

  document.addEventListener("DOMContentLoaded", function () {  // after Material's listener
    document.querySelectorAll("link[rel=x-hreflang-pending]").forEach(function (link) {
      link.rel = "alternate"
    })
  }, { once: true })

  // Language roots from the head's hreflang links, which name this page in every language
  // ("/masks/", "/zh/masks/"): what is left once the path they all end with is taken off.
  var links = Array.prototype.filter.call(
    document.querySelectorAll("link[rel=alternate][hreflang], link[rel=x-hreflang-pending]"),
    function (link) { return link.hreflang !== "x-default" })
  var parts = links.map(function (link) {
    return new URL(link.href).pathname.split("/").filter(Boolean)
  })
  function sameLast() {
    var last = parts.length ? parts[0][parts[0].length - 1] : undefined
    return last !== undefined && parts.every(function (p) { return p[p.length - 1] === last })
  }
  while (parts.length > 1 && sameLast()) parts.forEach(function (p) { p.pop() })
  var roots = links.map(function (link, i) {
    return { lang: link.hreflang, path: "/" + parts[i].map(function (s) { return s + "/" }).join("") }
  })
  roots.sort(function (a, b) { return b.path.length - a.path.length })
  var own = document.documentElement.lang.split("-")[0]  // zh-Hans: the hreflang is zh

  function language(item) {
    var link = item.querySelector("a[href]")
    var path = link ? new URL(link.href).pathname : ""
    for (var i = 0; i < roots.length; i++)
      if (path.indexOf(roots[i].path) === 0) return roots[i].lang
    return own
  }

  var list = document.querySelector(".md-search-result__list")
  if (!list || roots.length < 2) return
  var observer = new MutationObserver(function () {
    var items = Array.prototype.slice.call(list.children)
    var sorted = items.filter(function (item) { return language(item) === own })
      .concat(items.filter(function (item) { return language(item) !== own }))
    if (sorted.every(function (item, i) { return item === items[i] })) return
    observer.disconnect()
    sorted.forEach(function (item) { list.appendChild(item) })
    observer.observe(list, { childList: true })
  })
  observer.observe(list, { childList: true })
})()
