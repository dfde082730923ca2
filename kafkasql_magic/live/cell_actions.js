// "Insert into a new cell" and "Copy" of the schema pane, run in the page (JupyterLab 4, Notebook 7).
// The button sits in the pane's output, so the click has made its cell the active one; the
// cell toolbar's "insert below" makes a new cell (without a cell toolbar, the notebook's "b" key
// in command mode does), and the new cell's CodeMirror view takes the text.
// Only whole-line comments here: the pane joins the lines into one onclick attribute.
(function (button, action) {
  var pane = button.closest(".kstream-schema-pane");
  var area = pane && pane.querySelector("textarea");
  var text = area ? area.value : "";
  if (!text.trim()) return;
  if (action === "copy") {
    navigator.clipboard.writeText(text).then(function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = "Copy"; }, 1500);
    });
    return;
  }
  var cell = button.closest(".jp-Cell");
  var notebook = cell && cell.closest(".jp-Notebook");
  if (!notebook) return;
  var before = notebook.querySelectorAll(".jp-Cell").length;
  var tries = 0;
  cell.dispatchEvent(new MouseEvent("mousedown", {bubbles: true}));
  function insertBelow() {
    var command = cell.querySelector("[data-command='notebook:insert-cell-below']");
    if (!command && ++tries < 20) return setTimeout(insertBelow, 50);
    if (command) {
      command.click();
    } else {
      notebook.focus();
      notebook.dispatchEvent(new KeyboardEvent("keydown", {key: "b", code: "KeyB", keyCode: 66, bubbles: true}));
    }
    tries = 0;
    fill();
  }
  function fill() {
    var target = notebook.querySelectorAll(".jp-Cell").length > before && cell.nextElementSibling;
    var content = target && target.querySelector(".cm-content");
    var view = content && content.cmView && (content.cmView.rootView || content.cmView).view;
    if (view) {
      view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: "%%kstream\n" + text}});
      view.focus();
    } else if (++tries < 50) {
      setTimeout(fill, 50);
    }
  }
  insertBelow();
})(this, ACTION);
