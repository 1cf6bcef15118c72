// evolog viewer: fetches server-rendered views, sets "as of" for all of them, follows the
// log live (the server's SSE, read with fetch so the bearer token can be sent), and posts
// steering actions. Loaded from this origin only; no inline script anywhere.
"use strict";
(function () {
  const VIEWS = ["timeline", "memory", "survival", "edges"];
  const $ = (id) => document.getElementById(id);
  let view = "timeline";
  let head = 0;
  let follower = null;
  let pending = null;

  // A token arrives once in the fragment (never sent to a server, nor in a Referer) and is
  // kept for this tab only.
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("token")) {
    sessionStorage.setItem("evolog-token", hash.get("token"));
  }
  const first = hash.get("view") || location.hash.slice(1);
  if (VIEWS.includes(first)) view = first;
  history.replaceState(null, "", "#" + view);

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const token = sessionStorage.getItem("evolog-token");
    if (token) h["Authorization"] = "Bearer " + token;
    return h;
  }

  function params() {
    const form = new FormData($("filters"));
    const out = new URLSearchParams();
    for (const [k, v] of form.entries()) if (String(v).trim()) out.set(k, String(v).trim());
    return out;
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message;
    box.hidden = !message;
  }

  async function errorOf(response) {
    try {
      const body = await response.json();
      return response.status + ": " + (body.error || JSON.stringify(body));
    } catch (e) {
      return response.status + " " + response.statusText;
    }
  }

  async function load() {
    $("status").textContent = "loading " + view + "…";
    for (const tab of document.querySelectorAll(".tab")) {
      tab.classList.toggle("on", tab.dataset.view === view);
    }
    const response = await fetch("/ui/view/" + view + "?" + params(), { headers: headers() });
    if (!response.ok) {
      showError(await errorOf(response));
      $("status").textContent = "";
      return;
    }
    showError("");
    $("view").innerHTML = await response.text();
    head = Number(response.headers.get("X-Evolog-Head-Seq") || 0);
    const seq = Number(response.headers.get("X-Evolog-Seq") || 0);
    const slider = $("as_of_slider");
    slider.max = String(head);
    slider.value = String(seq);
    const live = !$("as_of").value.trim() && !$("at").value.trim();
    $("status").textContent = view + " as of seq " + seq + " of " + head +
      (live && follower ? " (live)" : "");
    document.body.dataset.loaded = view + ":" + seq;
  }

  function soon() {
    if (pending) clearTimeout(pending);
    pending = setTimeout(() => { pending = null; load(); }, 400);
  }

  async function follow() {
    if (follower) return;
    const ctl = new AbortController();
    follower = ctl;
    try {
      const url = "/v1/events?follow=true&after=" + head;
      const response = await fetch(url, { headers: headers(), signal: ctl.signal });
      if (!response.ok) throw new Error(await errorOf(response));
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        // Any event line means the log grew: views at "now" are drawn again.
        if (new TextDecoder().decode(value).includes("\nevent: ") &&
            !$("as_of").value.trim() && !$("at").value.trim()) soon();
      }
    } catch (e) {
      if (e.name !== "AbortError") showError("live updates stopped: " + e.message);
    } finally {
      if (follower === ctl) follower = null;
    }
  }

  async function act(button) {
    const body = Object.assign({ op: button.dataset.op }, button.dataset);
    if (body.op === "edit") {
      const text = window.prompt("New text of note " + body.item);
      if (text === null) return;
      body.text = text;
    }
    const response = await fetch("/ui/action", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
    });
    if (!response.ok) {
      showError(await errorOf(response));
      return;
    }
    const done = await response.json();
    await load();
    $("status").textContent = done.op + " appended" + (done.seq ? " at seq " + done.seq : "");
  }

  document.addEventListener("click", (event) => {
    const tab = event.target.closest(".tab");
    if (tab) {
      event.preventDefault();
      view = tab.dataset.view;
      history.replaceState(null, "", "#" + view);
      load();
      return;
    }
    const button = event.target.closest("button.act");
    if (button) act(button);
  });
  document.addEventListener("DOMContentLoaded", () => {
    $("filters").addEventListener("submit", (event) => { event.preventDefault(); load(); });
    $("as_of_slider").addEventListener("change", (event) => {
      $("as_of").value = event.target.value;
      load();
    });
    $("live").addEventListener("click", () => {
      $("as_of").value = "";
      $("at").value = "";
      load().then(follow);
    });
    load().then(follow);
  });
})();
