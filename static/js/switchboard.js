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

  // OAuth2 Connect opens a popup; when it reports back (same origin only), the page reloads to show the new state.
  // What the member had not sent or saved survives the reload: a chat's Tools choices (and the picker stays open),
  // the composer's text, and the focus, which returns to the server that was connected.
  var DRAFT = "chat-draft:" + window.location.pathname;
  var connecting = null;
  document.addEventListener("click", function (event) {
    var link = event.target.closest("a[data-oauth-popup]");
    if (!link) return;
    connecting = link.getAttribute("data-server-id");
    var popup = window.open(link.href, "mcp-oauth2", "popup,width=520,height=680");
    if (popup) event.preventDefault();
  });
  window.addEventListener("message", function (event) {
    if (event.origin !== window.location.origin) return;
    if (!event.data || event.data.type !== "mcp-oauth2-complete") return;
    var picker = document.getElementById("mcp-picker");
    var composer = document.getElementById("composer-input");
    var draft = { focus: connecting || String(event.data.serverID || "") };
    if (picker && picker.tagName === "DETAILS") {
      draft.open = picker.open;
      draft.checked = [];
      picker.querySelectorAll("input[name=servers]:checked").forEach(function (box) {
        draft.checked.push(box.value);
      });
    }
    if (composer && composer.value) draft.composer = composer.value;
    try {
      sessionStorage.setItem(DRAFT, JSON.stringify(draft));
    } catch (error) {
      // Storage unavailable: the reload shows what was saved.
    }
    window.location.reload();
  });
  onReady(function () {
    var draft = null;
    try {
      draft = JSON.parse(sessionStorage.getItem(DRAFT) || "null");
      sessionStorage.removeItem(DRAFT);
    } catch (error) {
      draft = null;
    }
    if (!draft) return;
    var picker = document.getElementById("mcp-picker");
    var focusBox = null;
    if (picker && picker.tagName === "DETAILS" && draft.checked) {
      picker.querySelectorAll("input[name=servers]").forEach(function (box) {
        if (!box.disabled) box.checked = draft.checked.indexOf(box.value) !== -1;
        if (box.value === draft.focus) focusBox = box;
      });
      picker.open = Boolean(draft.open) || Boolean(focusBox);
    }
    var composer = document.getElementById("composer-input");
    if (composer && draft.composer && !composer.value) composer.value = draft.composer;
    if (focusBox) focusBox.focus();
    else if (composer) composer.focus();
  });

  // After saving a chat's Tools, focus returns to the picker rather than to the top of the page.
  document.addEventListener("htmx:afterSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "mcp-tools") return;
    var summary = document.querySelector("#mcp-picker summary");
    if (summary) summary.focus();
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
