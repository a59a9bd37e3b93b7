// research-fsm's page: plain JavaScript, no framework, no build step.
// Every text from the server is put in the page with textContent (never as HTML),
// and only http(s) URLs the browser parses become links, so nothing from the web can
// inject HTML. Answers and reports come as Markdown already parsed by the server into a
// tree of allow-listed elements (see web/_markdown.py), built here with createElement
// against the same allow-list.
"use strict";
(() => {
  const THREAD_KEY = "research-fsm-thread";
  const SHOWN_KEY = "research-fsm-shown"; // the view and the report/session it showed
  const FOLDER_RE = /^[A-Za-z0-9][A-Za-z0-9-]{0,99}$/;
  const THREAD_RE = /^web-[A-Za-z0-9_-]{8,64}$/;
  const $ = (id) => document.getElementById(id);
  const state = { thread: null, token: null, busy: false };

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // -- the conversation's id: one per tab (sessionStorage), also in the address --
  function newThreadId() {
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }
  function chooseThread() {
    const fromHash = new URLSearchParams(location.hash.slice(1)).get("thread");
    const stored = sessionStorage.getItem(THREAD_KEY);
    return [fromHash, stored].find((t) => t && THREAD_RE.test(t)) || newThreadId();
  }
  function setThread(id) {
    state.thread = id;
    sessionStorage.setItem(THREAD_KEY, id);
    history.replaceState(null, "", "#thread=" + id);
    $("thread-label").textContent = "conversation " + id;
  }

  // -- server-sent events over fetch (POST with a JSON body) --
  async function postEvents(url, body, handlers, signal) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) throw new Error(await errorMessage(response));
    if (handlers.started) handlers.started(response.headers.get("X-Run-Id"));
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, end), handlers);
        buffer = buffer.slice(end + 2);
      }
    }
  }
  function dispatch(block, handlers) {
    let name = "message";
    let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    if (name === "error") throw new Error(JSON.parse(data).message);
    const handler = handlers[name];
    if (handler) handler(JSON.parse(data));
  }
  async function errorMessage(response) {
    try {
      const body = await response.json();
      if (body && typeof body.message === "string") return body.message;
    } catch (_) { /* not JSON */ }
    return "The server answered " + response.status + " " + response.statusText;
  }

  // -- rendering: text, **bold** and _italic_ as elements, links only for http(s) --
  function renderText(container, text) {
    container.replaceChildren();
    for (const paragraph of String(text).split(/\n{2,}/)) {
      const p = el("p");
      for (const part of paragraph.split(/(\*\*[^*\n]+\*\*|(?<!\w)_[^_\n]+_(?!\w))/)) {
        if (/^\*\*[^*\n]+\*\*$/.test(part)) p.append(el("strong", null, part.slice(2, -2)));
        else if (/^_[^_\n]+_$/.test(part)) p.append(el("em", null, part.slice(1, -1)));
        else if (part) p.append(document.createTextNode(part));
      }
      container.append(p);
    }
  }
  // an http(s) URL the browser parses (https://x.example:99999/ does not), else null
  function safeUrl(url) {
    if (typeof url !== "string" || !/^https?:\/\//i.test(url)) return null;
    try {
      const parsed = new URL(url);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed : null;
    } catch (_) {
      return null;
    }
  }
  function makeLink(a, url) {
    a.href = url;
    a.rel = "noopener noreferrer";
    a.target = "_blank";
    return a;
  }
  function link(url, text) {
    return safeUrl(url) || localSource(url) ? makeLink(el("a", null, text || url), url) : null;
  }
  // the page's own read-only view of a cited local file at its lines (made by the server)
  const SOURCE_VIEW_RE = /^\/api\/source\/deep-[0-9A-Za-z-]{1,80}\/S\d{1,5}$/;
  function localSource(url) {
    return typeof url === "string" && SOURCE_VIEW_RE.test(url);
  }
  function renderSources(container, sources) {
    if (!sources || !sources.length) return;
    const list = el("ul", "sources");
    for (const source of sources) {
      const item = el("li");
      if (source.id) item.append(el("span", "cite", "[" + source.id + "] "));
      const parsed = safeUrl(source.url);
      if (parsed) {
        item.append(link(source.url, source.title), el("span", "muted", " " + parsed.host));
      } else if (localSource(source.url)) {
        item.append(link(source.url, source.title), el("span", "muted", " (the cited lines)"));
      } else {
        item.append([source.title, source.url].filter(Boolean).join(" — "));
      }
      list.append(item);
    }
    container.append(el("p", "sources-title", "Sources"), list);
  }

  // -- Markdown: the server's tree of allow-listed elements, built element by element --
  const TAGS = new Set(("p h1 h2 h3 h4 h5 h6 ul ol li strong em code pre blockquote hr br a " +
    "table thead tbody tr th td span").split(" "));
  const ATTRIBUTES = { a: ["href", "class"], th: ["class"], td: ["class"], span: ["class"],
    ol: ["start"] };
  function buildTree(parent, nodes, depth) {
    if (!Array.isArray(nodes) || depth > 60) return;
    for (const node of nodes) {
      if (typeof node === "string") {
        parent.append(document.createTextNode(node));
        continue;
      }
      if (!node || typeof node !== "object" || !TAGS.has(node.t)) continue;
      const child = document.createElement(node.t);
      const attrs = node.a && typeof node.a === "object" ? node.a : {};
      for (const name of ATTRIBUTES[node.t] || []) {
        const value = attrs[name];
        if (typeof value !== "string") continue;
        if (name === "href") {
          if (safeUrl(value) || localSource(value)) makeLink(child, value);
        } else if (name === "class") {
          child.className = value.replace(/[^a-z -]/g, "");
        } else if (/^\d{1,6}$/.test(value)) {
          child.setAttribute(name, value);
        }
      }
      buildTree(child, node.c, depth + 1);
      parent.append(child.tagName === "TABLE" ? wrapTable(child) : child);
    }
  }
  function wrapTable(table) {
    const box = el("div", "table-box");
    box.append(table);
    return box;
  }
  function renderMarkdown(container, tree, lang) {
    container.replaceChildren();
    container.classList.add("markdown");
    if (lang) container.lang = lang;
    buildTree(container, tree, 0);
  }
  function scrollDown() {
    const log = $("log");
    log.scrollTop = log.scrollHeight;
    if (log.scrollHeight <= log.clientHeight) log.lastElementChild?.scrollIntoView({ block: "nearest" });
  }

  // -- the conversation --
  function addMessage(role, text) {
    $("empty-hint").hidden = true;
    const item = el("li", "msg " + role);
    const bubble = el("div", "bubble");
    item.append(bubble);
    $("log").append(item);
    if (text !== undefined) renderText(bubble, text);
    scrollDown();
    return { item, bubble };
  }
  function showAnswer(turn, data) {
    turn.bubble.classList.remove("streaming");
    if (Array.isArray(data.tree)) renderMarkdown(turn.bubble, data.tree);
    else renderText(turn.bubble, data.text);
    renderSources(turn.bubble, data.sources);
    renderBadge(turn.bubble, data);
    if (data.usage) turn.bubble.append(el("p", "muted", data.usage));
    renderNotes(turn.bubble, data.notes);
    addCopy(turn, data.text);
  }
  // how sure an answer is (saved with it: a reloaded conversation shows it again)
  function renderBadge(container, data) {
    if (!data.confidence_label || typeof data.confidence !== "number") return;
    const level = data.confidence >= 8 ? "high" : data.confidence >= 5 ? "medium" : "low";
    container.append(el("p", "confidence " + level, data.confidence_label));
  }
  // "Copy": the answer's text (Markdown as written) to the clipboard
  function addCopy(turn, text) {
    if (!text || !navigator.clipboard) return;
    const copy = el("button", "copy", "Copy");
    copy.type = "button";
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(text);
        copy.textContent = "Copied";
      } catch (error) {
        copy.textContent = "Copy failed";
      }
      setTimeout(() => { copy.textContent = "Copy"; }, 1500);
    });
    turn.item.append(copy);
  }
  // what degraded for this answer (an LLM step the rules did, JSON asked for in text): each once, as text
  function renderNotes(container, notes) {
    const unique = [...new Set((Array.isArray(notes) ? notes : []).map(String))];
    if (!unique.length) return;
    const box = el("div", "notes");
    box.append(el("p", "notes-title", "Notes"));
    const list = el("ul");
    for (const note of unique) list.append(el("li", null, note));
    box.append(list);
    container.append(box);
  }
  function setPending(token) {
    state.token = token || null;
    $("ask-form").dataset.token = state.token || "";
    $("clarify-banner").hidden = !state.token;
    $("send").textContent = state.token ? "Answer" : "Ask";
  }
  function progressList(container) {
    const list = el("ol", "progress");
    container.append(list);
    const steps = new Map();
    return (data) => {
      if (typeof data.finished === "boolean") { // reports, deep research: a line per agent
        const key = data.agent + "|" + (data.branch || "");
        if (!steps.has(key)) steps.set(key, list.appendChild(el("li")));
        const step = steps.get(key);
        step.textContent = data.message;
        step.className = data.finished ? "done" : "active";
        return;
      }
      for (const step of list.querySelectorAll("li.active")) step.className = "done";
      list.append(el("li", "active", data.message));
      scrollDown();
    };
  }

  async function send(text) {
    const token = $("ask-form").dataset.token || null;
    addMessage("user", text);
    const turn = addMessage("assistant");
    turn.item.classList.add("pending");
    const progress = progressList(turn.item);
    turn.item.append(turn.bubble); // progress above the answer
    let streamed = "";
    const handlers = {
      progress: (data) => {
        // answering a question: the resumed "waiting for your answer" step is not news
        if (!(token && data.agent === "interrupt")) progress(data);
      },
      token: (data) => {
        streamed += data.text;
        turn.bubble.classList.add("streaming");
        renderText(turn.bubble, streamed);
        scrollDown();
      },
      answer: (data) => { setPending(null); showAnswer(turn, data); },
      question: (data) => {
        turn.item.classList.add("question");
        renderText(turn.bubble, data.text);
        setPending(data.token);
      },
    };
    try {
      if (token) await postEvents("/api/clarify", { token, text }, handlers);
      else await postEvents("/api/ask", { thread_id: state.thread, text }, handlers);
    } catch (error) {
      turn.item.classList.add("error");
      turn.bubble.classList.remove("streaming");
      turn.bubble.textContent = error.message;
      if (token) await restorePending();
    } finally {
      turn.item.classList.remove("pending");
      for (const step of turn.item.querySelectorAll(".progress li.active")) step.className = "done";
      scrollDown();
    }
  }

  async function restorePending() {
    const data = await loadThread(state.thread);
    setPending(data && data.pending ? data.pending.token : null);
  }
  async function loadThread(id) {
    const response = await fetch("/api/threads/" + encodeURIComponent(id));
    if (!response.ok) return null;
    return response.json();
  }
  async function restore() {
    const data = await loadThread(state.thread);
    if (!data) return;
    for (const message of data.messages) {
      const turn = addMessage(message.role === "user" ? "user" : "assistant", message.text);
      if (message.role !== "user" && Array.isArray(message.tree)) {
        renderMarkdown(turn.bubble, message.tree);
      }
      renderSources(turn.bubble, message.sources);
      if (message.role !== "user") {
        renderBadge(turn.bubble, message);
        addCopy(turn, message.text);
      }
    }
    if (data.pending) {
      $("log").lastElementChild?.classList.add("question");
      setPending(data.pending.token);
    }
  }

  // -- reports and deep research --
  function fileLinks(container, files, inline) {
    if (!files || !files.length) return;
    const row = inline ? container : el("p", "files");
    for (const file of files) {
      const a = el("a", "download", "Download " + file.name);
      a.href = file.url;
      a.setAttribute("download", "");
      row.append(a);
    }
    if (!inline) container.append(row);
  }
  // a whole report (its [S#] link to the sources), in its language, in the panel;
  // "Full width" shows it over the page, Escape or the button closes it
  function showReport(output, data) {
    remember(output.id === "report-output" ? "reports" : "sessions", data.folder || data.id);
    const article = el("article", "report");
    renderMarkdown(article, data.tree, data.language);
    const bar = el("p", "files");
    const widen = el("button", "widen", "Full width");
    widen.type = "button";
    widen.addEventListener("click", () => {
      const wide = !article.classList.contains("wide");
      article.classList.toggle("wide", wide);
      widen.classList.toggle("wide", wide);
      widen.textContent = wide ? "Close" : "Full width";
    });
    bar.append(widen);
    output.append(bar, article);
    fileLinks(bar, data.files, true);
  }
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    for (const button of document.querySelectorAll("button.widen.wide")) button.click();
  });
  function reportHandlers(output, progress) {
    return {
      progress,
      report: (data) => {
        if (Array.isArray(data.tree) && data.tree.length) {
          showReport(output, data); // the report itself, in its language
          return;
        }
        output.append(el("p", "result", data.summary));
        fileLinks(output, data.files);
        remember("reports", data.folder);
      },
      question: (data) => {
        const box = el("div", "choices");
        box.append(el("p", "question", data.text));
        for (const choice of data.choices || []) {
          const button = el("button", null, choice);
          button.type = "button";
          button.addEventListener("click", () => {
            box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
            runJob(output, "/api/report/answer", { thread_id: data.thread_id, text: choice },
              reportHandlers);
          });
          box.append(button);
        }
        output.append(box);
      },
    };
  }
  function deepHandlers(output, progress) {
    const draft = el("div", "draft");
    output.append(draft);
    return {
      progress,
      token: (data) => { draft.textContent += data.text; },
      deep: (data) => {
        draft.remove();
        if (Array.isArray(data.tree) && data.tree.length) {
          showReport(output, data);
          return;
        }
        if (data.summary) renderText(output.appendChild(el("div", "result")), data.summary);
        renderSources(output, data.sources);
        fileLinks(output, data.files);
        remember("sessions", data.folder);
      },
    };
  }
  // a report or research run: its progress, a Cancel button while it runs (the run is
  // stopped on the server; what it finished stays saved), then Continue when cancelled
  async function runJob(output, url, body, makeHandlers) {
    const bar = el("p", "job-bar");
    const cancel = el("button", "cancel", "Cancel");
    cancel.type = "button";
    cancel.hidden = true;
    bar.append(cancel);
    output.append(bar);
    const progress = progressList(output);
    const aborter = new AbortController();
    let run = null;
    let cancelled = false;
    cancel.addEventListener("click", async () => {
      cancel.disabled = true;
      cancel.textContent = "Cancelling…";
      try {
        const response = await fetch("/api/cancel", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ thread_id: run }),
        });
        if (!response.ok) throw new Error(await errorMessage(response));
        cancelled = true;
      } catch (error) {
        output.append(el("p", "error", error.message));
      }
      aborter.abort();
    });
    const handlers = makeHandlers(output, progress);
    handlers.started = (id) => {
      run = id;
      cancel.hidden = !id;
      if (id) sessionStorage.setItem(SHOWN_KEY, JSON.stringify({ ...shown(), running: { output: output.id, run: id } }));
    };
    handlers.cancelled = () => { cancelled = true; };
    try {
      await postEvents(url, body, handlers, aborter.signal);
    } catch (error) {
      if (!cancelled) output.append(el("p", "error", error.message));
    } finally {
      cancel.remove();
      for (const step of output.querySelectorAll(".progress li.active")) {
        step.className = cancelled ? "stopped" : "done";
      }
    }
    const was = shown();
    if (was.running && was.running.run === run) {
      delete was.running;
      sessionStorage.setItem(SHOWN_KEY, JSON.stringify(was));
    }
    if (cancelled && run) offerContinue(output, bar, run, makeHandlers,
      "Cancelled. The steps it finished are saved; Continue picks it up from there (" + run + ").");
  }
  // a run that stopped before its end (cancelled, or the page left while it ran): Continue
  function offerContinue(output, bar, run, makeHandlers, text) {
    const note = el("p", "cancelled", text);
    const again = el("button", "continue", "Continue");
    again.type = "button";
    again.addEventListener("click", () => {
      note.remove();
      again.remove();
      runJob(output, "/api/continue", { thread_id: run }, makeHandlers);
    });
    bar.append(again);
    output.append(note);
  }
  function jobForm(form, output, view, url, body, makeHandlers) {
    $(form).addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = $(form).querySelector("button[type=submit]");
      button.disabled = true;
      $(output).replaceChildren();
      showView(view);
      try {
        await runJob($(output), url, body(), makeHandlers);
      } finally {
        button.disabled = false;
      }
    });
  }

  // -- the main column's views (tabs), and what they showed, kept across a reload --
  function shown() {
    try {
      const value = JSON.parse(sessionStorage.getItem(SHOWN_KEY) || "{}");
      return value && typeof value === "object" ? value : {};
    } catch (_) {
      return {};
    }
  }
  function remember(kind, id) {
    if (typeof id !== "string" || !FOLDER_RE.test(id)) return;
    sessionStorage.setItem(SHOWN_KEY, JSON.stringify({ ...shown(), [kind]: id }));
  }
  function showView(view) {
    for (const tab of document.querySelectorAll(".tabs .tab")) {
      const on = tab.dataset.view === view;
      tab.setAttribute("aria-selected", String(on));
      $(tab.dataset.view).hidden = !on;
    }
    sessionStorage.setItem(SHOWN_KEY, JSON.stringify({ ...shown(), view }));
  }
  async function restoreShown() {
    const was = shown();
    for (const kind of ["reports", "sessions"]) {
      if (typeof was[kind] === "string" && FOLDER_RE.test(was[kind])) await openSaved(kind, was[kind], false);
    }
    if (["chat", "report-view", "deep-view"].includes(was.view)) showView(was.view);
    const left = was.running; // the page was left (reloaded, closed) while this ran: it stopped
    const RUN_RE = /^(report-[0-9a-f]{10}|deep-\d{8}T\d{6}Z-[0-9a-f]{16})$/;
    if (left && typeof left.run === "string" && RUN_RE.test(left.run)
        && ["report-output", "deep-output"].includes(left.output)) {
      delete was.running;
      sessionStorage.setItem(SHOWN_KEY, JSON.stringify(was));
      const output = $(left.output);
      output.replaceChildren();
      const bar = el("p", "job-bar");
      output.append(bar);
      offerContinue(output, bar, left.run, left.output === "report-output" ? reportHandlers : deepHandlers,
        "The page was left while this ran, which stopped it. The steps it finished are saved; Continue picks it up from there (" + left.run + ").");
      showView(left.output === "report-output" ? "report-view" : "deep-view");
    }
  }

  // -- wiring --
  // -- past work: conversations, reports and research sessions, opened again --
  function pastItem(title, detail, open) {
    const li = el("li");
    const button = el("button", "past-open", title);
    button.type = "button";
    button.addEventListener("click", open);
    li.append(button, el("span", "muted small", detail));
    return li;
  }
  function when(iso) {
    const d = new Date(iso);
    return isNaN(d) ? String(iso || "") : d.toLocaleString();
  }
  async function openSaved(kind, id, show = true) {
    const response = await fetch(`/api/saved/${kind}/${encodeURIComponent(id)}`);
    if (!response.ok) return;
    const data = await response.json();
    const output = $(kind === "reports" ? "report-output" : "deep-output");
    output.replaceChildren();
    showReport(output, data);
    if (show) showView(kind === "reports" ? "report-view" : "deep-view"); // the main column
  }
  async function loadPast() {
    const response = await fetch("/api/past");
    if (!response.ok) return;
    const data = await response.json();
    const lists = {
      conversations: [$("past-conversations"), (c) => pastItem(c.title,
        `${c.turns} question${c.turns === 1 ? "" : "s"} · ${when(c.updated)}`, () => openConversation(c.thread_id))],
      reports: [$("past-reports"), (r) => pastItem(r.title, when(r.created), () => openSaved("reports", r.id))],
      sessions: [$("past-sessions"), (s) => pastItem(s.title, `${s.status} · ${when(s.created)}`, () => openSaved("sessions", s.id))],
    };
    for (const [key, [list, make]] of Object.entries(lists)) {
      list.replaceChildren(...(data[key] || []).map(make));
      if (!list.children.length) list.append(el("li", "muted small", "none yet"));
    }
  }
  async function openConversation(id) {
    if (state.busy || !THREAD_RE.test(id)) return;
    setThread(id);
    setPending(null);
    $("log").replaceChildren();
    $("empty-hint").hidden = true;
    showView("chat");
    await restore();
  }

  function start() {
    setThread(chooseThread());
    $("ask-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const text = $("question").value.trim();
      if (!text || state.busy) return;
      state.busy = true;
      $("send").disabled = true;
      $("question").value = "";
      try {
        await send(text);
      } finally {
        state.busy = false;
        $("send").disabled = false;
        $("question").focus();
      }
    });
    $("question").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        $("ask-form").requestSubmit();
      }
    });
    $("new-conversation").addEventListener("click", () => {
      showView("chat");
      setThread(newThreadId());
      setPending(null);
      $("log").replaceChildren();
      $("empty-hint").hidden = false;
      $("question").focus();
    });
    jobForm("report-form", "report-output", "report-view", "/api/report", () => ({
      company: $("report-company").value, lang: $("report-lang").value,
      pdf: $("report-pdf").checked,
    }), reportHandlers);
    jobForm("deep-form", "deep-output", "deep-view", "/api/deep", () => ({
      topic: $("deep-topic").value, lang: $("deep-lang").value, pdf: $("deep-pdf").checked,
    }), deepHandlers);
    $("past-panel").addEventListener("toggle", () => { if ($("past-panel").open) loadPast(); });
    for (const tab of document.querySelectorAll(".tabs .tab")) {
      tab.addEventListener("click", () => showView(tab.dataset.view));
    }
    Promise.all([restore(), restoreShown()]).finally(() => { document.body.dataset.ready = "true"; });
  }
  start();
})();
