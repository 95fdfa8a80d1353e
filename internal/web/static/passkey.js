// Passkeys (WebAuthn). A form with data-passkey="create" (register) or
// "get" (sign in, step up) is hidden in the page; where the browser has
// WebAuthn this script shows it. On submit it posts the form's fields to
// data-begin, which answers the ceremony's options as JSON; it asks the
// browser (navigator.credentials), puts the answer as JSON in the form's
// credential field and submits the form, whose answer is a page as any
// form's. What went wrong is said in the element named by data-status.
(function () {
  "use strict";
  if (!window.PublicKeyCredential || !navigator.credentials) {
    return;
  }
  var decode = function (s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) {
      s += "=";
    }
    var bin = atob(s);
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) {
      out[i] = bin.charCodeAt(i);
    }
    return out.buffer;
  };
  var encode = function (buf) {
    var bytes = new Uint8Array(buf);
    var bin = "";
    for (var i = 0; i < bytes.length; i++) {
      bin += String.fromCharCode(bytes[i]);
    }
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };
  var answer = function (cred) {
    var r = cred.response;
    var out = {id: cred.id, rawId: encode(cred.rawId), type: cred.type, response: {clientDataJSON: encode(r.clientDataJSON)},
      clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {}};
    if (cred.authenticatorAttachment) {
      out.authenticatorAttachment = cred.authenticatorAttachment;
    }
    if (r.attestationObject) {
      out.response.attestationObject = encode(r.attestationObject);
      if (r.getTransports) {
        out.response.transports = r.getTransports();
      }
    } else {
      out.response.authenticatorData = encode(r.authenticatorData);
      out.response.signature = encode(r.signature);
      if (r.userHandle) {
        out.response.userHandle = encode(r.userHandle);
      }
    }
    return JSON.stringify(out);
  };
  document.querySelectorAll("form[data-passkey]").forEach(function (form) {
    var status = document.getElementById(form.getAttribute("data-status"));
    var say = function (text) {
      if (status) {
        status.textContent = text;
      }
    };
    var create = form.getAttribute("data-passkey") === "create";
    form.hidden = false;
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      say(create ? "Follow your browser's prompt to create the passkey." : "Follow your browser's prompt to use your passkey.");
      var body = new URLSearchParams();
      new FormData(form).forEach(function (v, k) {
        if (k !== "credential") {
          body.append(k, v);
        }
      });
      fetch(form.getAttribute("data-begin"), {method: "POST", body: body, credentials: "same-origin", headers: {Accept: "application/json"}})
        .then(function (res) {
          return res.json().then(function (data) {
            if (!res.ok) {
              throw new Error(data.message || "The server refused.");
            }
            return data;
          });
        })
        .then(function (opts) {
          var pk = opts.publicKey;
          pk.challenge = decode(pk.challenge);
          if (pk.user) {
            pk.user.id = decode(pk.user.id);
          }
          (pk.excludeCredentials || []).concat(pk.allowCredentials || []).forEach(function (c) {
            c.id = decode(c.id);
          });
          return create ? navigator.credentials.create({publicKey: pk}) : navigator.credentials.get({publicKey: pk});
        })
        .then(function (cred) {
          form.elements.credential.value = answer(cred);
          say("Checking…");
          form.submit();
        })
        .catch(function (err) {
          say("The passkey was not used: " + (err && err.message ? err.message : "cancelled") + ". Try again.");
        });
    });
  });
})();
