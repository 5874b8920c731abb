// The chat composer's `/` menu: an ARIA combobox (the textarea) controlling a listbox of the chat's skills.
// Typing `/` at the start of a word opens it; typing filters it; ↑/↓ move, Enter/Tab/click pick, Esc closes.
// Also: Ctrl/Cmd+Enter sends the message, and a successful send clears the composer. Without this file the
// composer is a plain textarea and the Send button still works.
(function () {
  "use strict";

  var BLUR_DELAY = 150;
  var SELECTOR = "textarea[data-skills-url]";
  var states = new WeakMap();
  var uid = 0;

  function stateOf(input) {
    var state = states.get(input);
    if (!state) {
      state = {
        open: false,
        start: -1, // index of the "/" being typed
        query: "",
        data: null, // the skills endpoint's answer for this open, null while loading
        failed: false,
        request: 0, // which open the pending fetch belongs to
        options: [], // the selectable option elements, in order
        active: -1,
        blurTimer: null,
        below: false, // the menu opened under the textarea (see place)
      };
      states.set(input, state);
    }
    return state;
  }

  function listboxOf(input) {
    return document.getElementById(input.getAttribute("aria-controls"));
  }

  function isSpace(ch) {
    return /\s/.test(ch);
  }

  // The word that ends at the caret: [start, caret). Null when there is a selection.
  function wordBeforeCaret(input) {
    if (input.selectionStart !== input.selectionEnd) return null;
    var caret = input.selectionStart;
    var start = caret;
    while (start > 0 && !isSpace(input.value.charAt(start - 1))) start -= 1;
    return { start: start, text: input.value.slice(start, caret) };
  }

  // Menu contents ---------------------------------------------------------------------------------------------------

  function matches(item, query) {
    if (!query) return true;
    return (
      String(item.alias).toLowerCase().indexOf(query) !== -1 || String(item.name).toLowerCase().indexOf(query) !== -1
    );
  }

  function inert(text, className) {
    // A non-selectable row: still an option (a listbox holds only options and groups), but disabled.
    var li = document.createElement("li");
    li.setAttribute("role", "option");
    li.setAttribute("aria-disabled", "true");
    li.setAttribute("aria-selected", "false");
    li.className = className;
    li.textContent = text;
    return li;
  }

  function render(input) {
    var state = stateOf(input);
    var listbox = listboxOf(input);
    var query = state.query.toLowerCase();
    listbox.textContent = "";
    state.options = [];
    if (state.failed) {
      listbox.appendChild(inert("Skills could not be loaded.", "slash-empty"));
    } else if (!state.data) {
      listbox.appendChild(inert("Loading skills…", "slash-empty"));
    } else {
      var total = 0;
      (state.data.groups || []).forEach(function (group) {
        total += (group.items || []).length;
        var items = (group.items || []).filter(function (item) {
          return matches(item, query);
        });
        if (!items.length) return;
        uid += 1;
        var li = document.createElement("li");
        li.setAttribute("role", "group");
        var label = document.createElement("span");
        label.id = listbox.id + "-group-" + uid;
        label.textContent = group.label;
        li.setAttribute("aria-labelledby", label.id);
        li.appendChild(label);
        items.forEach(function (item) {
          uid += 1;
          var option = document.createElement("div");
          option.setAttribute("role", "option");
          option.setAttribute("aria-selected", "false");
          option.id = listbox.id + "-option-" + uid;
          option.setAttribute("data-alias", item.alias);
          var alias = document.createElement("span");
          alias.className = "slash-alias";
          alias.textContent = "/" + item.alias;
          option.appendChild(alias);
          if (item.description) {
            var description = document.createElement("small");
            description.textContent = item.description;
            option.appendChild(description);
          }
          li.appendChild(option);
          state.options.push(option);
        });
        listbox.appendChild(li);
      });
      if (!state.options.length) {
        listbox.appendChild(inert(total || query ? "No matching skills" : "No skills available", "slash-empty"));
      }
      if (state.data.workspace_note) listbox.appendChild(inert(state.data.workspace_note, "slash-note"));
    }
    place(input);
    setActive(input, state.options.length ? 0 : -1);
  }

  // The stylesheet puts the menu above the textarea. When there is no room for it there (a short chat: it would
  // stick out above the top of the page, out of reach), the "below" class drops it under the textarea instead.
  // Within one open it only ever moves down, so filtering never makes it jump back and forth.
  function place(input) {
    var state = stateOf(input);
    var listbox = listboxOf(input);
    if (state.below) return;
    var box = (listbox.offsetParent || input).getBoundingClientRect();
    var needed = listbox.offsetHeight + 8;
    var roomBelow = window.innerHeight - box.bottom;
    if (box.top < needed && roomBelow > box.top) {
      state.below = true;
      listbox.classList.add("below");
    }
  }

  function setActive(input, index, fromPointer) {
    var state = stateOf(input);
    state.options.forEach(function (option, i) {
      option.setAttribute("aria-selected", i === index ? "true" : "false");
    });
    state.active = index;
    if (index >= 0) {
      input.setAttribute("aria-activedescendant", state.options[index].id);
      if (!fromPointer) state.options[index].scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  // Opening, closing, picking ---------------------------------------------------------------------------------------

  function open(input, start) {
    var state = stateOf(input);
    var listbox = listboxOf(input);
    if (!listbox) return;
    state.open = true;
    state.start = start;
    state.query = "";
    state.data = null;
    state.failed = false;
    state.request += 1;
    var request = state.request;
    listbox.hidden = false;
    input.setAttribute("aria-expanded", "true");
    render(input);
    fetch(input.getAttribute("data-skills-url"), {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    })
      .then(function (response) {
        if (!response.ok) throw new Error("status " + response.status);
        return response.json();
      })
      .then(function (data) {
        if (!state.open || state.request !== request) return;
        state.data = data;
        render(input);
      })
      .catch(function () {
        if (!state.open || state.request !== request) return;
        state.failed = true;
        render(input);
      });
  }

  function close(input) {
    var state = stateOf(input);
    var listbox = listboxOf(input);
    clearTimeout(state.blurTimer);
    state.open = false;
    state.below = false;
    state.request += 1; // a fetch still in flight is ignored
    state.options = [];
    state.active = -1;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    if (listbox) {
      listbox.hidden = true;
      listbox.classList.remove("below");
      listbox.textContent = "";
    }
  }

  function pick(input, option) {
    var state = stateOf(input);
    var alias = option.getAttribute("data-alias");
    var value = input.value;
    var start = state.start;
    // Replace the whole word being typed (the "/query" up to the next whitespace), keep everything else.
    var end = Math.max(start + 1, input.selectionStart);
    while (end < value.length && !isSpace(value.charAt(end))) end += 1;
    var hasSpace = end < value.length;
    var inserted = "/" + alias + (hasSpace ? "" : " ");
    input.value = value.slice(0, start) + inserted + value.slice(end);
    var caret = start + inserted.length + (hasSpace ? 1 : 0);
    close(input);
    input.focus();
    input.setSelectionRange(caret, caret);
    input.dispatchEvent(new Event("input", { bubbles: true }));
  }

  // Follow the text: open on a freshly typed "/" that starts a word, filter while the word still starts with that
  // "/", close otherwise (a space, the "/" deleted, the caret moved to another word).
  function update(input, event) {
    var state = stateOf(input);
    var word = wordBeforeCaret(input);
    if (state.open) {
      if (word && word.start === state.start && word.text.charAt(0) === "/") {
        if (word.text.slice(1) !== state.query) {
          state.query = word.text.slice(1);
          render(input);
        }
        return;
      }
      close(input);
    }
    var inserted = event && !/^delete/.test(event.inputType || "");
    if (inserted && word && word.text === "/") open(input, word.start);
  }

  // Events ----------------------------------------------------------------------------------------------------------

  document.addEventListener("input", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches(SELECTOR) || event.isComposing) return;
    update(input, event);
  });

  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches(SELECTOR) || event.isComposing) return;
    var state = stateOf(input);
    if (state.open) {
      var count = state.options.length;
      switch (event.key) {
        case "ArrowDown":
          event.preventDefault();
          if (count) setActive(input, (state.active + 1) % count);
          return;
        case "ArrowUp":
          event.preventDefault();
          if (count) setActive(input, (state.active - 1 + count) % count);
          return;
        case "Enter":
          event.preventDefault(); // never a newline, never a send while the menu is open
          if (state.active >= 0) pick(input, state.options[state.active]);
          else close(input);
          return;
        case "Tab":
          if (state.active >= 0) {
            event.preventDefault();
            pick(input, state.options[state.active]);
          } else {
            close(input);
          }
          return;
        case "Escape":
          event.preventDefault();
          close(input);
          return;
        case "ArrowLeft":
        case "ArrowRight":
        case "Home":
        case "End":
          // The caret may leave the "/word": re-check once it has moved.
          setTimeout(function () {
            if (stateOf(input).open) update(input, null);
          }, 0);
          return;
        default:
          return;
      }
    }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && input.form) {
      event.preventDefault();
      if (input.form.requestSubmit) input.form.requestSubmit();
    }
  });

  function inputFor(node) {
    var listbox = node.closest && node.closest("[role=listbox]");
    if (!listbox || !listbox.id) return null;
    return document.querySelector(SELECTOR + '[aria-controls="' + listbox.id + '"]');
  }

  // A click on an option picks it; the textarea keeps the focus (a mousedown in the menu would take it).
  document.addEventListener("mousedown", function (event) {
    if (inputFor(event.target)) event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    if (event.target.matches && event.target.matches(SELECTOR) && stateOf(event.target).open) {
      update(event.target, null); // the caret may have left the "/word"
      return;
    }
    var option = event.target.closest && event.target.closest("[role=option][data-alias]");
    var input = option && inputFor(option);
    if (input && stateOf(input).open) pick(input, option);
  });

  document.addEventListener("mouseover", function (event) {
    var option = event.target.closest && event.target.closest("[role=option][data-alias]");
    var input = option && inputFor(option);
    if (!input) return;
    var index = stateOf(input).options.indexOf(option);
    if (index >= 0 && index !== stateOf(input).active) setActive(input, index, true);
  });

  document.addEventListener("focusout", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches(SELECTOR)) return;
    var state = stateOf(input);
    if (!state.open) return;
    clearTimeout(state.blurTimer);
    state.blurTimer = setTimeout(function () {
      if (document.activeElement !== input) close(input);
    }, BLUR_DELAY);
  });

  // A message sent through htmx: clear the composer (a refused send keeps the text).
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-reset-on-send]") || !event.detail.successful) return;
    var trigger = event.detail.xhr && event.detail.xhr.getResponseHeader("HX-Trigger");
    if (trigger && trigger.indexOf("chat-send-refused") !== -1) return;  // refused: keep what was typed
    form.querySelectorAll(SELECTOR).forEach(function (input) {
      close(input);
      input.value = "";
    });
  });
})();
