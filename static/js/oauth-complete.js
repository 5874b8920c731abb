// The OAuth2 popup's last page: tell the page that opened it (same origin only), then close.
(function () {
  "use strict";
  var body = document.body;
  if (!body || !body.hasAttribute("data-oauth-complete")) return;
  var serverID = Number(body.getAttribute("data-server-id"));
  if (window.opener && !window.opener.closed) {
    window.opener.postMessage({ type: "mcp-oauth2-complete", serverID: serverID }, window.location.origin);
  }
  window.close();
})();
