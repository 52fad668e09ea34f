/* The copy button of a ```pycon doctest block copies the Python a reader can paste, not the
   transcript: the `>>> ` and `... ` prompts are stripped and the output lines are dropped, as
   doctest itself reads the block. A blank line follows each multi-line statement, so the
   classic Python REPL accepts the paste too.

   Material's copy button (content.code.copy) copies the `data-copy` attribute of the code
   element when there is one, and the element's text otherwise: this script sets `data-copy`
   on doctest blocks only. tests/e2e checks the clipboard against Python's own doctest parser. */
(function () {
  "use strict"

  var PROMPT = /^>>>( |$)/
  var CONTINUATION = /^\.\.\.( |$)/

  function runnable(transcript) {
    var out = []
    var example = null
    function flush() {
      if (example === null) return
      while (example.length > 1 && example[example.length - 1] === "") example.pop()
      out.push.apply(out, example)
      if (example.length > 1) out.push("")
      example = null
    }
    transcript.split("\n").forEach(function (line) {
      if (PROMPT.test(line)) {
        flush()
        example = [line.slice(4)]
      } else if (example !== null && CONTINUATION.test(line)) {
        example.push(line.slice(4))
      } else {
        flush()  // an output line, or a blank line that ends the output
      }
    })
    flush()
    return out.join("\n").replace(/\s+$/, "")
  }

  function mark(root) {
    var blocks = root.querySelectorAll(".highlight pre > code")
    for (var i = 0; i < blocks.length; i++) {
      var code = blocks[i]
      var text = code.textContent
      if (code.hasAttribute("data-copy") || !PROMPT.test(text.replace(/^\s+/, ""))) continue
      code.setAttribute("data-copy", runnable(text))
    }
  }

  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(function () { mark(document) })  // instant navigation, too
  } else {
    mark(document)
  }
})()
