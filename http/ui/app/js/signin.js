// Signing in with email and password. A 429 from the login throttle is
// shown as the wait its Retry-After names, counted down, with the button
// disabled until then: trying earlier is refused anyway.

import { signIn, ApiError } from "./api.js";
import { t, onLangChange } from "./i18n.js";

export function createSignIn({ signedIn }) {
  const form = document.getElementById("signin-form");
  const email = document.getElementById("email");
  const password = document.getElementById("password");
  const submit = form.querySelector("button[type=submit]");
  const msg = document.getElementById("signin-msg");
  let waitUntil = 0;
  let timer = 0;
  let lastError = null; // re-rendered when the language changes

  function show(text, isError) {
    msg.textContent = text;
    msg.classList.toggle("error", Boolean(isError));
  }

  function tick() {
    const left = Math.ceil((waitUntil - Date.now()) / 1000);
    if (left > 0) {
      show(t("waitSeconds", { n: left }), true);
      submit.disabled = true;
      return;
    }
    clearInterval(timer);
    timer = 0;
    submit.disabled = false;
    show("", false);
  }

  function render() {
    if (waitUntil > Date.now()) tick();
    else if (lastError) show(describe(lastError), true);
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    lastError = null;
    submit.disabled = true;
    show(t("signingIn"), false);
    try {
      await signIn(email.value.trim(), password.value);
    } catch (err) {
      submit.disabled = false;
      if (err instanceof ApiError && err.status === 429) {
        waitUntil = Date.now() + Math.max(1, err.retryAfter) * 1000;
        if (!timer) timer = setInterval(tick, 250);
        tick();
      } else {
        lastError = err;
        show(describe(err), true);
      }
      password.focus();
      return;
    }
    password.value = "";
    show("", false);
    submit.disabled = false;
    signedIn();
  });
  onLangChange(render);

  return {
    // reset shows the form, with a reason (a session that ended) if any.
    reset(reason) {
      lastError = null;
      show(reason || "", Boolean(reason));
      email.focus();
    },
  };
}

export function describe(err) {
  if (err instanceof ApiError && err.status === 0) return t("networkError", { error: err.message });
  return t("apiError", { error: err.message });
}
