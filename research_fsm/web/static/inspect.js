// research-fsm's thread inspector: plain JavaScript, no framework, no build step.
// Every value of a state, a payload or a message is put in the page with textContent
// (never as HTML). The only markup inserted is Mermaid's drawing of the graph, made in
// the browser from the node names of the graph's code (Mermaid's strict mode).
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const CSRF = document.querySelector('meta[name="csrf-token"]').content;
  const view = {
    thread: null, path: "", editable: false, rows: [], next: null, head: null,
    cp: null, cpThread: null, cpPath: "", listCursor: null, graphText: null,
  };

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function short(id) { return id ? String(id).slice(0, 8) : ""; }
  function when(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    return isNaN(d) ? String(iso) : d.toLocaleString();
  }

  // -- messages: the engine's own refusals, shown as text --
  function say(text, bad) {
    const box = $("message");
    box.textContent = text;
    box.className = bad ? "error" : "note";
    box.hidden = !text;
  }

  async function getJSON(url) {
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    const data = await response.json().catch(() => ({ message: response.statusText }));
    if (!response.ok) throw Object.assign(new Error(data.message || "request failed"), { kind: data.error });
    return data;
  }
  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
      body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({ message: response.statusText }));
    if (!response.ok) throw Object.assign(new Error(data.message || "request failed"), { kind: data.error });
    return data;
  }
  function refused(error) {
    say((error.kind ? error.kind + ": " : "") + error.message, true);
  }
  function query(params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, v);
    return q.toString();
  }
  function remember() {
    const q = query({ thread: view.thread, path: view.path, cp: view.cp });
    history.replaceState(null, "", q ? "#" + q : location.pathname);
  }

  // -- a JSON value as a collapsible tree (text only) --
  function tree(value, label, depth) {
    const isObj = value !== null && typeof value === "object";
    if (!isObj) {
      const line = el("div", "leaf");
      if (label !== undefined) line.append(el("span", "key", label + ": "));
      const text = typeof value === "string" ? value : JSON.stringify(value);
      const shown = el("span", "val " + (value === null ? "null" : typeof value));
      if (typeof value === "string" && text.length > 400) {
        shown.textContent = JSON.stringify(text.slice(0, 400)) + "…";
        const more = el("button", "link", `show all ${text.length.toLocaleString()} characters`);
        more.type = "button";
        more.addEventListener("click", () => { shown.textContent = JSON.stringify(text); more.remove(); });
        line.append(shown, more);
      } else {
        shown.textContent = typeof value === "string" ? JSON.stringify(value) : text;
        line.append(shown);
      }
      return line;
    }
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    const box = el("details", "branch");
    box.open = depth < 2 && entries.length <= 50;
    const summary = el("summary");
    if (label !== undefined) summary.append(el("span", "key", label + ": "));
    summary.append(el("span", "muted", Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`));
    box.append(summary);
    let drawn = false;
    const draw = () => {
      if (drawn) return;
      drawn = true;
      for (const [k, v] of entries) box.append(tree(v, k, depth + 1));
    };
    if (box.open) draw(); else box.addEventListener("toggle", draw, { once: true });
    return box;
  }

  // -- the threads --
  async function loadThreads(more) {
    const params = {
      prefix: $("prefix").value.trim(), status: $("status").value,
      children: $("children").checked ? "1" : "", cursor: more ? view.listCursor : "",
    };
    try {
      const data = await getJSON("api/threads?" + query(params));
      if (!more) $("threads").replaceChildren();
      for (const t of data.threads) $("threads").append(threadItem(t));
      view.listCursor = data.next;
      $("more-threads").hidden = !data.next;
      $("threads-note").textContent = $("threads").children.length ? "" : "No threads match.";
    } catch (error) {
      $("threads-note").textContent = error.message;
    }
  }
  function threadItem(t) {
    const li = el("li", "thread" + (t.id === view.thread ? " current" : ""));
    li.dataset.id = t.id;
    const button = el("button", "thread-open");
    button.type = "button";
    const top = el("span", "row");
    const shownStatus = t.unreadable ? "unreadable" : (t.status || "?");
    top.append(el("span", "tid", t.id), el("span", "status s-" + (t.unreadable ? "failed" : (t.status || "none")), shownStatus));
    const bottom = el("span", "muted small");
    const parts = [];
    if (t.node) parts.push("at " + t.node);
    if (t.checkpoints !== null && t.checkpoints !== undefined) parts.push(t.checkpoints + " checkpoints");
    if (t.updated) parts.push(when(t.updated));
    if (t.parent) parts.push("child of " + t.parent);
    bottom.textContent = parts.join(" · ");
    button.append(top, bottom);
    if (t.unreadable) button.append(el("span", "note small unreadable", t.unreadable));
    button.addEventListener("click", () => openThread(t.id, ""));
    li.append(button);
    return li;
  }

  // -- a thread: its timeline --
  async function openThread(thread, path, keepMessage) {
    if (!keepMessage) say("");
    view.thread = thread; view.path = path || ""; view.rows = []; view.cp = null;
    $("checkpoint-view").hidden = true;
    for (const li of document.querySelectorAll("#threads li")) li.classList.toggle("current", li.dataset.id === thread);
    let data;
    try {
      data = await getJSON("api/thread?" + query({ thread, path: view.path }));
    } catch (error) {
      refused(error);
      return;
    }
    view.path = data.path; view.editable = data.editable; view.head = data.head;
    view.rows = data.rows; view.next = data.next;
    $("pick-hint").hidden = true;
    $("thread-view").hidden = false;
    $("graph-box").hidden = false;
    $("thread-title").textContent = thread;
    const status = $("thread-status");
    status.textContent = data.head.status + (data.head.next ? " · next " + data.head.next : "");
    status.className = "status s-" + data.head.status;
    $("readonly-note").hidden = data.editable;
    for (const id of ["delete-thread", "edit-save", "cp-rerun", "cp-fork"]) $(id).disabled = !data.editable;
    $("delete-confirm").hidden = true;
    $("continue-run").hidden = !data.editable || !["failed", "running"].includes(data.head.status);
    showSuspensions(data.head);
    showNodes(data.graph);
    drawTimeline($("timeline"), view.rows, { thread, path: view.path });
    $("more-checkpoints").hidden = !data.next;
    if (data.graph) drawGraph(data.graph.mermaid, "current: " + (data.head.next || "—"));
    else drawGraph(null, "no graph given (read-only)");
    remember();
    loadForks(thread);
    follow(data.head);
  }

  // -- the forks of a thread: drawn as branches under the checkpoint they came from --
  async function loadForks(thread) {
    view.forks = [];
    $("forks-note").textContent = "";
    let data;
    try {
      data = await getJSON("api/forks?" + query({ thread }));
    } catch (error) { return; }
    if (view.thread !== thread) return;
    view.forks = data.forks;
    drawForks();
    const searched = data.complete ? "" : ` (searched the ${data.scanned} most recently updated threads)`;
    $("forks-note").textContent = data.forks.length
      ? `· ${data.forks.length} fork${data.forks.length === 1 ? "" : "s"} of this thread${searched}`
      : "";
  }
  function drawForks() {
    for (const old of document.querySelectorAll("#timeline .fork-to, #forks-away li")) old.remove();
    const away = $("forks-away");
    for (const f of view.forks || []) {
      const button = el("button", "link small fork-to", `↳ forked to ${f.thread} (${f.status})`);
      button.type = "button";
      button.dataset.thread = f.thread;
      button.addEventListener("click", () => openThread(f.thread, ""));
      const row = document.querySelector(`#timeline li.cp[data-id="${CSS.escape(f.checkpoint)}"]`);
      if (row) row.append(button);
      else away.append(el("li", null)).append(button);  // its checkpoint is on an older page
    }
  }

  // -- live follow: a running thread's timeline polled until its run stops --
  const FOLLOW_MS = 1500;
  function follow(head) {
    clearTimeout(view.followTimer);
    const running = head.status === "running";
    $("live").hidden = !running;
    if (!running || !$("follow").checked) return;
    const thread = view.thread;
    view.followTimer = setTimeout(async () => {
      if (view.thread !== thread) return;
      if (document.hidden) { follow(view.head); return; }
      try {
        const data = await getJSON("api/thread?" + query({ thread, path: view.path }));
        if (view.thread !== thread) return;
        if (data.head.id !== view.head.id || data.head.status !== view.head.status) {
          view.head = data.head; view.rows = data.rows; view.next = data.next;
          const status = $("thread-status");
          status.textContent = data.head.status + (data.head.next ? " · next " + data.head.next : "");
          status.className = "status s-" + data.head.status;
          $("continue-run").hidden = !view.editable || !["failed", "running"].includes(data.head.status);
          showSuspensions(data.head);
          drawTimeline($("timeline"), view.rows, { thread, path: view.path });
          drawForks();
          $("more-checkpoints").hidden = !data.next;
          if (data.graph) drawGraph(data.graph.mermaid, "current: " + (data.head.next || "—"));
          const current = view.cp && document.querySelector(`#timeline li.cp[data-id="${CSS.escape(view.cp)}"]`);
          if (current) current.classList.add("current");
          if (data.head.status !== "running") loadThreads(false);
        }
        follow(view.head);
      } catch (error) {
        $("live").hidden = true;  // the thread is gone, or the server: stop following
      }
    }, FOLLOW_MS);
  }

  async function moreCheckpoints() {
    try {
      const data = await getJSON("api/thread?" + query({ thread: view.thread, path: view.path, before: view.next }));
      view.rows = view.rows.concat(data.rows);
      view.next = data.next;
      drawTimeline($("timeline"), view.rows, { thread: view.thread, path: view.path });
      drawForks();
      $("more-checkpoints").hidden = !data.next;
    } catch (error) { refused(error); }
  }

  // Lines of history: walking oldest to newest, a checkpoint continues the line whose
  // head is its parent; else (a re-run from a past checkpoint, a fork) it starts one.
  function lines(rows) {
    const heads = [];
    const out = new Map();
    for (const r of rows.slice().reverse()) {
      let line = r.parent ? heads.indexOf(r.parent) : -1;
      if (line >= 0) heads[line] = r.id;
      else { line = heads.length; heads.push(r.id); }
      out.set(r.id, line);
    }
    return out;
  }

  function drawTimeline(list, rows, ctx) {
    list.replaceChildren();
    const lineOf = lines(rows);
    const seqOf = new Map(rows.map((r) => [r.id, r.seq]));
    let group = null;
    for (const r of rows) {
      const item = timelineRow(r, lineOf.get(r.id), seqOf, ctx);
      const parallel = r.branches && r.branches.length;
      if (parallel) {
        if (!group) {
          group = el("li", "parallel");
          group.append(el("div", "muted small", "parallel branches in flight"));
          group.append(el("ol", "timeline"));
          list.append(group);
        }
        group.lastChild.append(item);
      } else {
        group = null;
        list.append(item);
      }
    }
  }

  function timelineRow(r, line, seqOf, ctx) {
    const li = el("li", "cp line-" + (line % 6));
    li.dataset.id = r.id; li.dataset.seq = r.seq; li.dataset.line = line;
    const button = el("button", "cp-open");
    button.type = "button";
    const top = el("span", "row");
    top.append(el("span", "lane", "●"), el("span", "seq", "#" + r.seq));
    top.append(el("span", "node", r.node || (r.by === "run" ? "start" : r.by)));
    top.append(el("span", "status s-" + r.status, r.status));
    top.append(el("span", "muted small", "step " + r.step + " · " + when(r.time)));
    button.append(top);
    const notes = [];
    if (r.by === "rewind") notes.push(`↳ re-run from #${seqOf.get(r.parent) || short(r.parent)} (a new line)`);
    else if (r.by === "update") notes.push("edited by hand" + (r.as_node ? " as " + r.as_node : ""));
    else if (line > 0 && r.parent && seqOf.get(r.parent) !== r.seq - 1 && r.by === "run") notes.push(`↳ from #${seqOf.get(r.parent) || short(r.parent)}`);
    if (r.next) notes.push("next: " + r.next);
    if (r.error) notes.push(`failed in ${r.error.node}: ${r.error.exc_type}: ${r.error.message}`);
    if (notes.length) button.append(el("span", "note small", notes.join(" · ")));
    button.addEventListener("click", () => openCheckpoint(ctx.thread, ctx.path, r.id, li));
    li.append(button);
    if (r.by === "fork" && r.forked_from) {
      const source = r.forked_from;
      const back = el("button", "link small fork-source", `↳ forked from ${source.thread} at ${short(source.checkpoint)}`);
      back.type = "button";
      back.addEventListener("click", async () => {
        await openThread(source.thread, ctx.path);
        const row = document.querySelector(`#timeline li.cp[data-id="${CSS.escape(source.checkpoint)}"]`);
        if (row) { row.scrollIntoView({ block: "center" }); await openCheckpoint(source.thread, ctx.path, source.checkpoint, row); }
      });
      li.append(back);
    }
    if (r.branches && r.branches.length) {
      const b = el("ul", "branches small");
      for (const br of r.branches) b.append(el("li", "s-" + br.status, `${br.id}: ${br.status}${br.node ? " at " + br.node : ""}`));
      li.append(b);
    }
    for (const child of r.children || []) li.append(childRow(child, ctx));
    return li;
  }

  function childRow(child, ctx) {
    const box = el("div", "child");
    const path = ctx.path ? ctx.path + "/" + child.node : child.node;
    const open = el("button", "child-open link", `▸ subgraph ${child.node}: child thread ${child.thread} (${child.status || "not started"})`);
    open.type = "button";
    open.dataset.thread = child.thread;
    const nested = el("ol", "timeline child-timeline");
    nested.hidden = true;
    open.addEventListener("click", async () => {
      if (!nested.hidden) { nested.hidden = true; open.textContent = open.textContent.replace("▾", "▸"); return; }
      try {
        const data = await getJSON("api/thread?" + query({ thread: child.thread, path }));
        drawTimeline(nested, data.rows, { thread: child.thread, path: data.path });
        const main = el("li", "muted small");
        const link = el("button", "link", "open this child thread on its own");
        link.type = "button";
        link.addEventListener("click", () => openThread(child.thread, data.path));
        main.append(link);
        nested.prepend(main);
        nested.hidden = false;
        open.textContent = open.textContent.replace("▸", "▾");
      } catch (error) { refused(error); }
    });
    box.append(open, nested);
    return box;
  }

  // -- a pending suspension: its payload and a form to answer it --
  function showSuspensions(head) {
    const list = $("suspension-list");
    list.replaceChildren();
    const pending = head.suspensions || [];
    $("suspension").hidden = pending.length === 0;
    pending.forEach((s, i) => {
      const box = el("div", "suspension");
      const what = s.breakpoint ? `paused ${s.breakpoint} ${s.node} (a breakpoint)` : `${s.node} asks:`;
      box.append(el("p", "", what + (s.branch ? ` (branch ${s.branch})` : "") + (s.child_thread ? ` — from child thread ${s.child_thread}` : "")));
      if (!s.breakpoint) box.append(tree(s.payload, undefined, 0));
      if (s.answers && s.answers.length) {
        box.append(el("p", "", `answered so far (its earlier interrupt() calls, replayed on resume):`));
        box.append(tree(s.answers, undefined, 0));
      }
      if (s.token && view.editable) {
        if (s.breakpoint) {
          const go = el("button", "", "Continue");
          go.type = "button"; go.id = i ? "continue-" + i : "continue";
          go.addEventListener("click", () => resume(s.token, null));
          box.append(go);
        } else {
          const area = el("textarea", "json");
          area.rows = 2; area.spellcheck = false; area.id = i ? "resume-value-" + i : "resume-value";
          area.placeholder = 'The answer as JSON, e.g. "approve" or {"ok": true}';
          area.setAttribute("aria-label", "Resume value (JSON)");
          const go = el("button", "", "Resume");
          go.type = "button"; go.id = i ? "resume-" + i : "resume";
          go.addEventListener("click", () => {
            let value;
            try { value = JSON.parse(area.value); } catch (error) { say("The resume value is not JSON: " + error.message, true); return; }
            resume(s.token, value);
          });
          box.append(area, go);
        }
      }
      list.append(box);
    });
  }

  async function resume(token, value) {
    try {
      const done = await post("api/resume", { thread: view.thread, path: view.path, token, value });
      say(`Resumed: the run is ${done.status}.`);
      loadThreads(false);
      await openThread(view.thread, view.path, true);
    } catch (error) { refused(error); }
  }

  function showNodes(graph) {
    const select = $("edit-as-node");
    select.length = 1;
    for (const name of graph ? graph.nodes : []) select.append(new Option(name, name));
  }

  // -- a checkpoint: its state and what changed --
  async function openCheckpoint(thread, path, id, li) {
    for (const row of document.querySelectorAll(".cp.current")) row.classList.remove("current");
    if (li) li.classList.add("current");
    try {
      const data = await getJSON("api/checkpoint?" + query({ thread, path, checkpoint: id }));
      view.cp = id; view.cpThread = thread; view.cpPath = path;
      const c = data.checkpoint;
      $("checkpoint-view").hidden = false;
      $("cp-title").textContent = `#${c.seq} ${c.node || c.by}` + (thread !== view.thread ? ` (child ${thread})` : "");
      $("state-tree").replaceChildren(tree(data.state, undefined, 0));
      showDiff(data.diff, data.against);
      if (data.graph) drawGraph(data.graph.mermaid, "at #" + c.seq + ": next " + (c.next || "—"));
      remember();
    } catch (error) { refused(error); }
  }

  function showDiff(diff, against) {
    const box = $("diff");
    box.replaceChildren();
    box.append(el("p", "muted small", against ? `against checkpoint ${short(against)}` : "the thread's first checkpoint: every field is new"));
    if (!diff.length) box.append(el("p", "muted", "No field changed."));
    for (const d of diff) {
      const item = el("div", "change " + d.kind);
      item.append(el("div", "path", `${d.kind === "added" ? "+" : d.kind === "removed" ? "−" : "~"} ${d.path}`));
      if (d.text) {
        const p = el("p", "text-diff");
        for (const s of d.text) p.append(el(s.op === "equal" ? "span" : s.op === "insert" ? "ins" : "del", "", s.text));
        item.append(p);
      } else if (d.list && d.list.appended) {
        item.append(el("div", "muted small", `${d.list.appended.length} item(s) appended at ${d.list.at}`));
        for (const v of d.list.appended) item.append(el("ins", "item", v));
      } else if (d.list) {
        for (const op of d.list.ops) {
          item.append(el("div", "muted small", `at ${op.at}:`));
          for (const v of op.removed) item.append(el("del", "item", v));
          for (const v of op.added) item.append(el("ins", "item", v));
        }
      } else if ("old" in d && "new" in d && d.old.length + d.new.length < 60) {
        const line = el("div", "scalar");
        line.append(el("del", "item", d.old), el("span", "arrow", "→"), el("ins", "item", d.new));
        item.append(line);
      } else {
        if ("old" in d) item.append(el("del", "item", d.old));
        if ("new" in d) item.append(el("ins", "item", d.new));
      }
      box.append(item);
    }
  }

  function tab(which) {
    $("diff").hidden = which !== "diff";
    $("state-tree").hidden = which !== "state";
    $("tab-diff").setAttribute("aria-selected", String(which === "diff"));
    $("tab-state").setAttribute("aria-selected", String(which === "state"));
  }

  // -- the graph, drawn by the Mermaid copy shipped with the package --
  let mermaidLoading = null;
  let drawCount = 0;
  function loadMermaid() {
    if (!mermaidLoading) {
      mermaidLoading = new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = "static/mermaid.min.js";
        script.onload = () => {
          window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral", flowchart: { htmlLabels: false } });
          resolve(window.mermaid);
        };
        script.onerror = () => reject(new Error("the graph drawing library did not load"));
        document.head.append(script);
      });
    }
    return mermaidLoading;
  }
  async function drawGraph(text, note) {
    $("graph-note").textContent = note || "";
    const box = $("graph");
    if (!text) { box.replaceChildren(); return; }
    if (text === view.graphText) return;
    view.graphText = text;
    try {
      const mermaid = await loadMermaid();
      const { svg } = await mermaid.render("graph-svg-" + (++drawCount), text);
      if (view.graphText === text) box.innerHTML = svg;  // Mermaid's own sanitised SVG
    } catch (error) {
      box.replaceChildren(el("pre", "muted", text));
    }
  }

  // -- actions --
  async function act(url, body, done) {
    try {
      const result = await post(url, body);
      say(done(result));
      loadThreads(false);  // the list shows the thread's new status
      return result;
    } catch (error) { refused(error); return null; }
  }

  function bind() {
    $("filter").addEventListener("submit", (e) => { e.preventDefault(); loadThreads(false); });
    $("status").addEventListener("change", () => loadThreads(false));
    $("children").addEventListener("change", () => loadThreads(false));
    $("more-threads").addEventListener("click", () => loadThreads(true));
    $("open-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const id = $("open-id").value.trim();
      if (id) openThread(id, "");
    });
    $("more-checkpoints").addEventListener("click", moreCheckpoints);
    $("follow").addEventListener("change", () => { if (view.head) follow(view.head); });
    $("tab-diff").addEventListener("click", () => tab("diff"));
    $("tab-state").addEventListener("click", () => tab("state"));
    $("edit-save").addEventListener("click", async () => {
      let values;
      try { values = JSON.parse($("edit-values").value); } catch (error) { say("The fields are not JSON: " + error.message, true); return; }
      const asNode = $("edit-as-node").value || null;
      const ok = await act("api/update", { thread: view.thread, path: view.path, values, as_node: asNode },
        (r) => `Saved checkpoint ${short(r.checkpoint)} (${r.status}).`);
      if (ok) await openThread(view.thread, view.path, true);
    });
    $("cp-rerun").addEventListener("click", async () => {
      const ok = await act("api/rerun", { thread: view.cpThread, path: view.cpPath, checkpoint: view.cp },
        (r) => `Re-ran from the checkpoint: a new line, now ${r.status}.`);
      if (ok) await openThread(view.thread, view.path, true);
    });
    $("cp-fork").addEventListener("click", async () => {
      const target = $("fork-id").value.trim();
      if (!target) { say("Give the new thread an id.", true); return; }
      const ok = await act("api/fork", { thread: view.cpThread, path: view.cpPath, checkpoint: view.cp, new_thread: target },
        (r) => `Forked to thread ${r.thread}.`);
      if (ok) { await loadThreads(false); await openThread(target, view.cpPath, true); }
    });
    $("continue-run").addEventListener("click", async () => {
      const ok = await act("api/continue", { thread: view.thread, path: view.path },
        (r) => `The run went on: now ${r.status}.`);
      if (ok) await openThread(view.thread, view.path, true);
    });
    $("delete-thread").addEventListener("click", () => {
      $("delete-name").textContent = view.thread;
      $("delete-confirm").hidden = false;
    });
    $("delete-no").addEventListener("click", () => { $("delete-confirm").hidden = true; });
    $("delete-yes").addEventListener("click", async () => {
      const gone = view.thread;
      const ok = await act("api/delete", { thread: gone, path: view.path, confirm: gone }, () => `Deleted thread ${gone}.`);
      if (ok) {
        $("thread-view").hidden = true; $("checkpoint-view").hidden = true; $("pick-hint").hidden = false;
        view.thread = null; remember();
        await loadThreads(false);
      }
    });
  }

  async function start() {
    bind();
    await loadThreads(false);
    const asked = new URLSearchParams(location.hash.slice(1));
    if (asked.get("thread")) {
      await openThread(asked.get("thread"), asked.get("path") || "");
      if (asked.get("cp")) await openCheckpoint(view.thread, view.path, asked.get("cp"), document.querySelector(`.cp[data-id="${CSS.escape(asked.get("cp"))}"]`));
    }
    document.body.dataset.ready = "true";
  }
  start();
})();
