// The live view's page: Alpine.js (CSP build, vendored) renders the state that the
// daemon's server-sent events keep current. No markup is built from strings here:
// every value reaches the page through x-text or a bound attribute.
import Alpine from "/static/vendor/alpine-csp.esm.min.js";

const KEPT_STEPS = 20;
const KEPT_ENDED = 10;
const STATE_NAMES = {
  waiting_for_client: "running",
  thinking: "thinking",
  // An attached desktop with nothing to do: its next step is a ComputerService caller's.
  waiting_for_caller: "idle",
  paused: "paused",
  detached: "detached",
  ended: "ended",
};

async function post(path, body) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body || {}),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(data.error || `${response.status} ${response.statusText}`);
  }
  return data;
}

Alpine.data("liveView", () => ({
  sessions: [],
  principal: "",
  openMode: false,
  needLogin: false,
  token: "",
  loginError: "",
  error: "",
  connected: false,
  source: null,

  init() {
    this.start();
  },

  get linkText() {
    if (this.needLogin) return "";
    return this.connected ? "live" : "reconnecting...";
  },
  get linkClass() {
    return this.connected ? "live" : "down";
  },
  get canLogout() {
    return !this.needLogin && !this.openMode;
  },
  get noSessions() {
    return this.sessions.length === 0;
  },

  async start() {
    const response = await fetch("/api/me");
    if (response.status === 401 || response.status === 403) {
      const data = await response.json().catch(() => ({}));
      this.needLogin = true;
      this.principal = "";
      if (response.status === 403) this.loginError = data.error || "not an admin";
      return;
    }
    const me = await response.json();
    this.principal = me.principal;
    this.openMode = me.open_mode;
    this.needLogin = false;
    this.connect();
  },

  connect() {
    if (this.source) this.source.close();
    const source = new EventSource("/api/events");
    this.source = source;
    source.onopen = () => { this.connected = true; };
    source.onerror = () => {
      this.connected = false;
      // A refused stream (401: logged out, token removed) is not retried by the browser.
      if (source.readyState === EventSource.CLOSED) this.start();
    };
    const on = (kind, handler) =>
      source.addEventListener(kind, (event) => handler.call(this, JSON.parse(event.data)));
    on("snapshot", this.onSnapshot);
    on("session", this.onSession);
    on("step", this.onStep);
    on("results", this.onResults);
    on("frame", this.onFrame);
    on("gone", this.onGone);
  },

  async login() {
    this.loginError = "";
    try {
      await post("/api/login", { token: this.token });
    } catch (err) {
      this.loginError = err.message;
      return;
    }
    this.token = "";
    await this.start();
  },

  async logout() {
    if (this.source) this.source.close();
    await post("/api/logout", {}).catch(() => {});
    this.sessions = [];
    await this.start();
  },

  // Events -------------------------------------------------------------------------

  find(id) {
    return this.sessions.find((s) => s.session_id === id);
  },

  adopt(info) {
    let session = this.find(info.session_id);
    if (!session) {
      session = { steps: [], note: "", gone: false, ...info };
      this.sessions.unshift(session);
    }
    return session;
  },

  // The sessions running, then those that ended: the daemon's (it keeps the last few,
  // with their steps, results and last screen, so a reload shows them too), then any
  // older ones this page still shows.
  onSnapshot(message) {
    const current = message.sessions.map((info) => {
      const known = this.find(info.session_id);
      return { note: known ? known.note : "", gone: false, ...info };
    });
    current.reverse();
    const ended = (message.ended || []).map((info) => ({ note: "", ...info, gone: true }));
    const listed = new Set([...current, ...ended].map((s) => s.session_id));
    const older = this.sessions.filter((s) => s.gone && !listed.has(s.session_id));
    this.sessions = [...current, ...ended, ...older];
    this.keepEnded();
  },

  onSession(message) {
    const session = this.adopt(message);
    const { steps, type, ...fields } = message;
    this.update(session, fields);
  },

  // A summary older than what the page shows (a control's answer that arrived after
  // the event it caused, or a later one) changes nothing.
  update(session, fields) {
    if (fields.revision < (session.revision || 0)) return;
    Object.assign(session, fields);
  },

  onStep(message) {
    const session = this.find(message.session_id);
    if (!session) return;
    const { type, session_id, ...step } = message;
    session.steps.push(step);
    if (session.steps.length > KEPT_STEPS) session.steps.shift();
  },

  onResults(message) {
    const session = this.find(message.session_id);
    if (!session) return;
    const step = session.steps.find((st) => st.step === message.step);
    if (step) step.results = message.results;
  },

  onFrame(message) {
    const session = this.find(message.session_id);
    if (session) session.frame_seq = message.frame_seq;
  },

  // It left: the message is its final summary (steps with their results, ending,
  // last screen), which the card keeps showing.
  onGone(message) {
    const session = this.find(message.session_id);
    if (!session) return;
    const { type, steps, ...fields } = message;
    Object.assign(session, fields);
    if (steps) session.steps = steps;
    session.gone = true;
    session.state = "ended";
    session.taken_over = false;
    this.keepEnded();
  },

  keepEnded() {
    const ended = this.sessions.filter((s) => s.gone);
    if (ended.length > KEPT_ENDED) {
      const dropped = new Set(ended.slice(KEPT_ENDED).map((s) => s.session_id));
      this.sessions = this.sessions.filter((s) => !dropped.has(s.session_id));
    }
  },

  // Controls -----------------------------------------------------------------------

  async control(session, verb, body) {
    this.error = "";
    try {
      const info = await post(`/api/sessions/${encodeURIComponent(session.session_id)}/${verb}`, body);
      const { steps, ...fields } = info;
      this.update(session, fields);
    } catch (err) {
      this.error = `${verb}: ${err.message}`;
    }
  },
  pause(session) { return this.control(session, "pause"); },
  takeOver(session) { return this.control(session, "takeover"); },
  resume(session) { return this.control(session, "resume"); },
  stop(session) { return this.control(session, "stop"); },
  async handBack(session) {
    await this.control(session, "resume", { note: session.note });
    if (!this.error) session.note = "";
  },

  // What the page shows ----------------------------------------------------------

  isLive(s) { return !s.gone && s.state !== "ended"; },
  canPause(s) { return this.isLive(s) && s.state !== "paused"; },
  canResume(s) { return this.isLive(s) && s.state === "paused" && !s.taken_over; },
  showHandback(s) { return this.isLive(s) && s.taken_over; },
  // An ended session keeps its last screen (the daemon keeps it for its last few).
  hasFrame(s) { return s.frame_seq > 0; },
  noFrameText(s) { return this.isLive(s) ? "no screen yet" : "no screen"; },
  frameUrl(s) {
    if (!this.hasFrame(s)) return "";
    return `/api/sessions/${encodeURIComponent(s.session_id)}/frame?seq=${s.frame_seq}`;
  },
  stateText(s) {
    if (s.taken_over && this.isLive(s)) return "taken over";
    return STATE_NAMES[s.state] || s.state;
  },
  stepText(s) { return `step ${s.step} of ${s.max_steps}`; },
  metaText(s) {
    const where = s.client_hostname ? ` on ${s.client_hostname}` : "";
    return `${s.policy}${where} · ${s.principal}`;
  },
  endingText(s) {
    if (!s.ended) return "";
    const detail = s.ended.answer || s.ended.reason;
    return detail ? `${s.ended.outcome}: ${detail}` : s.ended.outcome;
  },
  stepLabel(st) { return `Step ${st.step}`; },
  // The policy version that made the step (the daemon's weights change while
  // sessions run); 0 is a policy without versions, shown as nothing.
  hasVersion(st) { return (st.policy_version || 0) > 0; },
  versionText(st) {
    const versions = st.versions || [];
    if (versions.length > 1) return versions.map((v) => `v${v}`).join("+");
    return `v${st.policy_version}`;
  },
  versionTitle(st) {
    const label = st.policy_label ? `policy ${st.policy_label}` : "policy version";
    const versions = st.versions || [];
    if (versions.length > 1) return `${label}: an update landed while this step was sampled`;
    return label;
  },
  newestFirst(s) { return [...s.steps].reverse(); },
  resultsText(st) {
    if (!st.results || st.results.length === 0) return "";
    return st.results
      .map((r) => (r.error ? `${r.status} (${r.error})` : r.status))
      .join(", ");
  },
}));

Alpine.start();
