// The Copy button beside a secret a page shows (progressive enhancement).
// A button with data-copy="ID" is hidden in the page; where the Clipboard
// API is available this script shows it, and a click copies the value of
// the element ID and says so in the element named by data-status. Without
// the script the field's text is selectable and copied by hand.
(function () {
  "use strict";
  if (!navigator.clipboard || !window.isSecureContext) {
    return;
  }
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById(button.getAttribute("data-status"));
    if (!field) {
      return;
    }
    var say = function (text) {
      if (status) {
        status.textContent = text;
      }
    };
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(field.value).then(function () {
        say("Copied.");
      }, function () {
        field.focus();
        field.select();
        say("Copying was refused; the text is selected, copy it with the keyboard.");
      });
    });
  });
})();
