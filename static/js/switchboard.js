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
  // The MCP server form shows only the chosen auth type's fields (all of them stay visible without JavaScript).
  function showAuthGroup(select) {
    document.querySelectorAll("[data-auth-group]").forEach(function (group) {
      group.hidden = group.getAttribute("data-auth-group") !== select.value;
    });
  }
  onReady(function () {
    var select = document.querySelector("select[data-auth-select]");
    if (select) showAuthGroup(select);
  });
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("select[data-auth-select]")) showAuthGroup(event.target);
  });

  // OAuth2 Connect opens a popup; when it reports back (same origin only), show the new state.
  document.addEventListener("click", function (event) {
    var link = event.target.closest("a[data-oauth-popup]");
    if (!link) return;
    var popup = window.open(link.href, "mcp-oauth2", "popup,width=520,height=680");
    if (popup) event.preventDefault();
  });
  // The page reloads to show the new state; a chat's unsaved Tools choices survive it (and the picker stays open).
  var PICKER_DRAFT = "mcp-picker-draft:" + window.location.pathname;
  window.addEventListener("message", function (event) {
    if (event.origin !== window.location.origin) return;
    if (!event.data || event.data.type !== "mcp-oauth2-complete") return;
    var picker = document.getElementById("mcp-picker");
    if (picker && picker.tagName === "DETAILS") {
      var checked = [];
      picker.querySelectorAll("input[name=servers]:checked").forEach(function (box) {
        checked.push(box.value);
      });
      try {
        sessionStorage.setItem(PICKER_DRAFT, JSON.stringify({ checked: checked, open: picker.open }));
      } catch (error) {
        // Storage unavailable: the reload shows the saved choices.
      }
    }
    window.location.reload();
  });
  onReady(function () {
    var draft = null;
    try {
      draft = JSON.parse(sessionStorage.getItem(PICKER_DRAFT) || "null");
      sessionStorage.removeItem(PICKER_DRAFT);
    } catch (error) {
      draft = null;
    }
    var picker = document.getElementById("mcp-picker");
    if (!draft || !picker || picker.tagName !== "DETAILS") return;
    picker.querySelectorAll("input[name=servers]").forEach(function (box) {
      if (!box.disabled) box.checked = draft.checked.indexOf(box.value) !== -1;
    });
    picker.open = Boolean(draft.open);
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
