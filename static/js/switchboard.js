// Small progressive enhancements. Every page works without this file.
(function () {
  "use strict";

  function onReady(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }

  onReady(function () {
    document.documentElement.classList.add("js");
  });

  // Organization pickers submit as soon as a choice is made.
  document.addEventListener("change", function (event) {
    var form = event.target.closest("form[data-autosubmit]");
    if (form && event.target.tagName === "SELECT") form.submit();
  });

  // Copy buttons: data-copy="#selector" copies that element's text.
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      button.textContent = "Copied";
    });
  });
  // Read-only views fetched by htmx into #dialog-slot open as a modal dialog; closing it returns focus to the link.
  var dialogOpener = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (event.detail.target && event.detail.target.id === "dialog-slot") dialogOpener = event.detail.elt;
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "dialog-slot") return;
    var dialog = event.detail.target.querySelector("dialog");
    if (!dialog) return;
    var menu = dialogOpener && dialogOpener.closest("details.menu");
    var returnTo = menu ? menu.querySelector("summary") : dialogOpener;
    if (menu) menu.removeAttribute("open");
    dialog.addEventListener("close", function () {
      dialog.remove();
      if (returnTo) returnTo.focus();
    });
    dialog.showModal();
  });
})();
