// The annotator's loop: claim one item (plus one prefetched), show it with its reason,
// label with buttons or keys 1-9, skip with s; the prefetched item shows at once.
(function () {
  const box = document.getElementById("labeler");
  if (!box) return;
  const queue = box.dataset.queue;
  const schema = JSON.parse(document.getElementById("schema").textContent);
  const itemEl = document.getElementById("item");
  const choicesEl = document.getElementById("choices");
  const statusEl = document.getElementById("status");
  const doneEl = document.getElementById("done");
  let current = null, buffer = [], done = 0, refilling = null;

  const options = schema.type === "categorical"
    ? schema.values.slice(0, 9)
    : Array.from({ length: Math.min(9, Math.floor(schema.max - schema.min) + 1) }, (_, i) => schema.min + i);

  options.forEach((value, i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "choice";
    b.dataset.value = String(value);
    b.textContent = `${i + 1} · ${value}`;
    b.addEventListener("click", () => submit(value));
    choicesEl.appendChild(b);
  });
  const skipBtn = document.createElement("button");
  skipBtn.type = "button";
  skipBtn.textContent = "s · skip";
  skipBtn.addEventListener("click", () => skip());
  choicesEl.appendChild(skipBtn);

  // One claim in flight at a time keeps at most two items leased ahead of the annotator.
  function refill() {
    if (refilling) return refilling;
    refilling = (async () => {
      if (buffer.length < 2) {
        const res = await telltale.api("POST", `/api/v1/queues/${encodeURIComponent(queue)}/claim`, { n: 2 - buffer.length });
        if (res.ok) buffer.push(...res.data.items);
        else statusEl.textContent = `Could not claim: ${telltale.message(res.data)}`;
      }
      refilling = null;
      if (!current) show();
    })();
    return refilling;
  }

  function el(tag, text, cls) {
    const n = document.createElement(tag);
    if (text !== undefined) n.textContent = text;
    if (cls) n.className = cls;
    return n;
  }

  function show() {
    itemEl.innerHTML = "";
    current = buffer.shift() || null;
    itemEl.dataset.itemId = current ? current.id : "";
    if (!current) {
      itemEl.appendChild(el("p", "The queue is empty. New items arrive when the queue fills.", "muted"));
      return;
    }
    const s = current.sample;
    itemEl.appendChild(el("p", current.reason || "", "reason"));
    if (s.image_url) {
      const img = document.createElement("img");
      img.src = s.image_url;
      img.alt = s.sample_id || "sample image";
      itemEl.appendChild(img);
    }
    if (s.text) itemEl.appendChild(el("pre", s.text));
    if (s.trace) {
      const t = s.trace;
      itemEl.appendChild(el("p", `Trace ${t.trace_id} · ${t.agent || ""} · ${t.status || ""} · decision ${t.decision || "–"} · ${t.steps ?? "?"} steps`));
      const a = el("a", "open the trace");
      a.href = `/traces/${encodeURIComponent(t.trace_id)}`;
      a.target = "_blank";
      itemEl.appendChild(a);
    }
    if (!s.image_url && !s.text && !s.trace) itemEl.appendChild(el("p", `${s.stream || ""} sample ${s.sample_id || s.key}`));
  }

  // The next (prefetched) item appears at once; this item's answer is sent meanwhile,
  // so fast keyboard labeling never waits for the network and never drops a key.
  async function finish(path, body, verb) {
    if (!current) return;
    const item = current;
    show();
    refill();
    const res = await telltale.api("POST", `/api/v1/queue-items/${item.id}/${path}`, body);
    if (res.ok) {
      if (verb === "labeled") { done += 1; doneEl.textContent = String(done); }
      statusEl.textContent = `Item ${item.id} ${verb}.`;
    } else {
      statusEl.textContent = `Item ${item.id} was not ${verb}: ${telltale.message(res.data)}`;
    }
  }

  const submit = (value) => current && finish("label", { lease_token: current.lease_token, label: value }, "labeled");
  const skip = () => current && finish("skip", { lease_token: current.lease_token }, "skipped");

  document.addEventListener("keydown", (ev) => {
    if (ev.target && ["INPUT", "TEXTAREA", "SELECT"].includes(ev.target.tagName)) return;
    if (ev.key === "s") { ev.preventDefault(); skip(); return; }
    const n = Number(ev.key);
    if (n >= 1 && n <= options.length) { ev.preventDefault(); submit(options[n - 1]); }
  });

  refill().then(refill);
})();
