// The web page of an openenv-gym server (openenv_gym/server/web.py says what each route answers).
// Everything the env writes is put on the page as text (textContent), never as markup.
"use strict";

const TOKEN_KEY = "openenv-gym-token";
const TOKEN_COOKIE = "openenv_gym_token";
// Keys and the action names they play, for the common arrow and space mappings (Taxi's
// actions are compass points).
const KEYS = {
  ArrowLeft: ["left", "west"], ArrowRight: ["right", "east"], ArrowUp: ["up", "north", "fire"],
  ArrowDown: ["down", "south"], " ": ["fire", "noop", "stay", "stick"],
};

const page = {
  token: sessionStorage.getItem(TOKEN_KEY),
  about: null,
  socket: null,
  legal: null,        // the legal actions, when the env says them
  over: true,         // the episode is over (or not started)
  running: false,     // playing random actions
  waiting: false,     // a command is out, its update not yet in
  frameNext: false,   // the next binary message is the frame of the last update
  updates: [],        // times of recent updates, for frames per second
};

const $ = (id) => document.getElementById(id);

function showError(message) {
  const error = $("error");
  error.textContent = message || "";
  error.hidden = !message;
}

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (page.token) headers.Authorization = "Bearer " + page.token;
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) {
    askForToken(page.token ? "That token was refused." : "");
    throw new Error("unauthorized");
  }
  return response;
}

function askForToken(message) {
  $("token-form").hidden = false;
  $("play").hidden = true;
  $("token-error").textContent = message;
  $("token").focus();
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  page.token = $("token").value;
  sessionStorage.setItem(TOKEN_KEY, page.token);
  $("token-form").hidden = true;
  start();
});

async function start() {
  let response;
  try {
    response = await api("about");
  } catch (error) {
    if (error.message !== "unauthorized") showError("Cannot reach the server: " + error.message);
    return;
  }
  if (!response.ok) {
    showError("The server answered " + response.status + " to /web/about");
    return;
  }
  page.about = await response.json();
  build(page.about);
  connect();
}

// -- the page, from /web/about ---------------------------------------------------------------

function build(about) {
  document.title = about.name + " - openenv-gym";
  $("name").textContent = about.name;
  $("description").textContent = about.description || "";
  $("instructions").textContent = about.instructions || "";
  $("no-frame").hidden = about.renders;
  $("play").hidden = false;
  if (about.seats) {
    const select = $("seat");
    select.replaceChildren(...about.seats.map((seat) => {
      const option = document.createElement("option");
      option.value = seat;
      option.textContent = seat;
      return option;
    }));
    $("seat-label").hidden = false;
  }
  if (about.report) $("tab-validation").hidden = false;
  buildControls(about.control);
}

function buildControls(control) {
  const box = $("controls");
  box.replaceChildren();
  if (control.kind === "buttons") {
    control.actions.forEach((action, i) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "action";
      button.dataset.action = String(action);
      button.textContent = control.labels[i];
      button.title = "action " + action;
      button.addEventListener("click", () => play(action));
      box.append(button);
    });
  } else if (control.kind === "sliders") {
    control.low.forEach((low, i) => {
      const label = document.createElement("label");
      const name = document.createElement("span");
      name.textContent = (control.names && control.names[i]) || ("action[" + i + "]");
      const slider = document.createElement("input");
      slider.type = "range";
      slider.className = "slider";
      slider.min = String(low);
      slider.max = String(control.high[i]);
      slider.step = control.integer ? "1" : String((control.high[i] - low) / 100);
      slider.value = String(control.integer ? Math.round((low + control.high[i]) / 2) : (low + control.high[i]) / 2);
      const shown = document.createElement("output");
      shown.textContent = slider.value;
      slider.addEventListener("input", () => { shown.textContent = slider.value; });
      slider.addEventListener("change", () => play(sliderAction()));
      label.append(name, slider, shown);
      box.append(label);
    });
    const button = document.createElement("button");
    button.type = "button";
    button.id = "step-button";  // not "step": that is the step count's cell
    button.textContent = "Step";
    button.addEventListener("click", () => play(sliderAction()));
    box.append(button);
  } else if (control.kind === "fields") {
    const inputs = control.fields.map((field) => {
      const label = document.createElement("label");
      const name = document.createElement("span");
      name.textContent = field.name;
      let input;
      if (field.enum) {
        input = document.createElement("select");
        input.append(...field.enum.map((value) => {
          const option = document.createElement("option");
          option.value = JSON.stringify(value);
          option.textContent = String(value);
          return option;
        }));
      } else {
        input = document.createElement("input");
        input.type = field.type === "integer" || field.type === "number" ? "number" : "text";
        if (field.type === "integer") input.step = "1";
      }
      input.className = "field";
      input.dataset.field = field.name;
      input.title = field.description || "";
      label.append(name, input);
      box.append(label);
      return [field, input];
    });
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Play";
    button.addEventListener("click", () => {
      const action = {};
      for (const [field, input] of inputs) {
        if (input.value === "" && !field.required) continue;
        if (field.enum) action[field.name] = JSON.parse(input.value);
        else if (field.type === "integer" || field.type === "number") action[field.name] = Number(input.value);
        else if (field.type === "string") action[field.name] = input.value;
        else action[field.name] = parseJson(input.value);
      }
      if (!page.over) command({ type: "step", action });
    });
    box.append(button);
  } else {
    const input = document.createElement("input");
    input.id = "action-text";
    input.placeholder = control.example ? "for example " + control.example : "an action";
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Play";
    const send = () => { if (input.value) command({ type: "step", text: input.value }); };
    button.addEventListener("click", send);
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") send(); });
    box.append(input, button);
  }
}

function parseJson(text) {
  try { return JSON.parse(text); } catch (error) { return text; }
}

function sliderAction() {
  const control = page.about.control;
  const values = [...document.querySelectorAll("#controls .slider")].map((slider) => Number(slider.value));
  return nest(values, control.shape);
}

function nest(flat, shape) {
  if (shape.length <= 1) return flat;
  const size = flat.length / shape[0];
  return Array.from({ length: shape[0] }, (_, i) => nest(flat.slice(i * size, (i + 1) * size), shape.slice(1)));
}

function randomAction() {
  const control = page.about.control;
  if (control.kind === "buttons") {
    const choices = page.legal || control.actions;
    return choices.length ? choices[Math.floor(Math.random() * choices.length)] : null;
  }
  if (control.kind === "sliders") {
    const values = control.low.map((low, i) => {
      const value = low + Math.random() * (control.high[i] - low);
      return control.integer ? Math.round(value) : value;
    });
    return nest(values, control.shape);
  }
  return null;
}

// -- the socket ------------------------------------------------------------------------------

function connect() {
  const url = new URL("live", location.href);
  if (page.token) {
    // Sent on this socket's handshake only (a browser sends a host's cookies to all its ports).
    document.cookie = TOKEN_COOKIE + "=" + encodeURIComponent(page.token) + "; path=" + url.pathname +
                      "; SameSite=Strict" + (location.protocol === "https:" ? "; Secure" : "");
  }
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const socket = new WebSocket(url);
  socket.binaryType = "blob";
  socket.addEventListener("message", (event) => receive(event.data));
  socket.addEventListener("close", (event) => {
    page.running = false;
    page.waiting = false;
    showRunning();
    if (event.code === 1008) askForToken("That token was refused.");
    else showError("The connection closed (" + event.code + (event.reason ? ": " + event.reason : "") +
                   "). Reload the page to reconnect.");
  });
  page.socket = socket;
}

function command(message) {
  if (!page.socket || page.socket.readyState !== WebSocket.OPEN) return;
  page.waiting = true;
  page.socket.send(JSON.stringify(message));
}

function play(action) {
  if (action === null || page.over) return;
  // A key may name an action the env's mask forbids, as a disabled button does.
  if (page.legal !== null && typeof action === "number" && !page.legal.includes(action)) return;
  command({ type: "step", action: { [page.about.control.field || "action"]: action } });
}

function reset() {
  const seed = $("seed").value;
  const message = { type: "reset" };
  if (seed !== "") message.seed = Number(seed);
  if (page.about.seats) message.options = { agent: $("seat").value };
  command(message);
}

async function receive(data) {
  if (typeof data !== "string") {
    if (page.frameNext) await drawFrame(data);
    page.frameNext = false;
    afterUpdate();
    return;
  }
  const message = JSON.parse(data);
  if (message.type === "error") {
    page.waiting = false;
    page.running = false;
    showRunning();
    showError(message.message);
    return;
  }
  if (message.type !== "update") return;
  showError("");
  show(message);
  page.frameNext = message.frame;
  if (!message.frame) afterUpdate();
}

async function drawFrame(blob) {
  const canvas = $("frame");
  const bitmap = await createImageBitmap(blob);
  if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
    canvas.width = bitmap.width;
    canvas.height = bitmap.height;
    canvas.classList.toggle("small", bitmap.width < 200);
  }
  canvas.getContext("2d").drawImage(bitmap, 0, 0);
  bitmap.close();
  canvas.hidden = false;
  canvas.dataset.frames = String(Number(canvas.dataset.frames || 0) + 1);
}

function show(update) {
  page.over = update.done;
  page.legal = update.legal;
  $("step").textContent = String(update.step);
  $("reward").textContent = update.reward === null || update.reward === undefined ? "-" : String(update.reward);
  $("return").textContent = String(Math.round(update.return * 1000) / 1000);
  $("status").textContent = update.done ? (update.truncated ? "truncated: press Reset" : "over: press Reset") : "playing";
  $("episodes").textContent = String(update.episodes);
  $("text").textContent = update.text || "";
  for (const button of document.querySelectorAll("#controls .action")) {
    const action = Number(button.dataset.action);
    button.disabled = update.done || (update.legal !== null && !update.legal.includes(action));
  }
  for (const input of document.querySelectorAll("#controls .slider, #step-button")) input.disabled = update.done;
  if (update.frame_error) {
    $("no-frame").textContent = "The env's frame failed: " + update.frame_error;
    $("no-frame").hidden = false;
  }
  showBoard(update);
  plotReturns(update.returns);
}

function showBoard(update) {
  const board = $("board");
  if (!update.board) { board.hidden = true; return; }
  $("controls").hidden = true;  // the board's cells are the action buttons
  board.style.gridTemplateColumns = "repeat(" + update.board[0].length + ", auto)";
  board.replaceChildren(...update.board.flat().map((cell) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = cell.mark ? "cell marked" : "cell";
    button.dataset.action = String(cell.action);
    button.textContent = cell.mark;
    button.disabled = update.done || cell.mark !== "" ||
                      (update.legal !== null && !update.legal.includes(cell.action));
    button.addEventListener("click", () => play(cell.action));
    return button;
  }));
  board.hidden = false;
}

function plotReturns(returns) {
  const canvas = $("returns");
  const context = canvas.getContext("2d");
  context.clearRect(0, 0, canvas.width, canvas.height);
  context.fillStyle = "#666";
  context.font = "11px system-ui";
  if (!returns.length) { context.fillText("returns of the episodes played", 8, 16); return; }
  const low = Math.min(0, ...returns), high = Math.max(...returns, low + 1e-9);
  const x = (i) => 30 + (returns.length === 1 ? 0 : i * (canvas.width - 40) / (returns.length - 1));
  const y = (value) => canvas.height - 14 - (value - low) / (high - low) * (canvas.height - 28);
  context.fillText(String(Math.round(high * 100) / 100), 2, 12);
  context.fillText(String(Math.round(low * 100) / 100), 2, canvas.height - 4);
  context.strokeStyle = "#2a7";
  context.beginPath();
  returns.forEach((value, i) => (i ? context.lineTo(x(i), y(value)) : context.moveTo(x(i), y(value))));
  context.stroke();
  context.fillStyle = "#2a7";
  returns.forEach((value, i) => context.fillRect(x(i) - 2, y(value) - 2, 4, 4));
}

function afterUpdate() {
  page.waiting = false;
  const now = performance.now();
  page.updates.push(now);
  while (page.updates.length && page.updates[0] < now - 2000) page.updates.shift();
  if (page.running) {
    const span = (now - page.updates[0]) / 1000;
    if (page.updates.length > 1 && span > 0) {
      $("fps").textContent = ((page.updates.length - 1) / span).toFixed(1) + " steps/s";
      $("fps").dataset.fps = String((page.updates.length - 1) / span);
    }
    if (page.over) reset(); else play(randomAction());
  }
}

function showRunning() {
  $("run").textContent = page.running ? "Stop" : "Run random actions";
}

// -- controls that are always there ----------------------------------------------------------

$("reset").addEventListener("click", reset);
$("run").addEventListener("click", () => {
  page.running = !page.running;
  page.updates = [];
  showRunning();
  if (page.running && !page.waiting) {
    if (page.over) reset(); else play(randomAction());
  }
});

document.addEventListener("keydown", (event) => {
  if (!page.about || page.about.control.kind !== "buttons" || event.target.tagName === "INPUT") return;
  const control = page.about.control;
  let action = null;
  if (/^[0-9]$/.test(event.key) && Number(event.key) < control.actions.length) {
    action = control.actions[Number(event.key)];
  } else if (KEYS[event.key]) {
    for (const word of KEYS[event.key]) {
      const i = control.labels.findIndex((label) => label.toLowerCase().split(/[^a-z]+/).includes(word));
      if (i >= 0) { action = control.actions[i]; break; }
    }
  }
  if (action !== null) {
    event.preventDefault();
    play(action);
  }
});

for (const [tab, shown] of [["tab-play", "play"], ["tab-validation", "validation"]]) {
  $(tab).addEventListener("click", async () => {
    document.querySelectorAll(".tab").forEach((other) => other.classList.toggle("chosen", other.id === tab));
    $("play").hidden = shown !== "play";
    $("validation").hidden = shown !== "validation";
    if (shown === "validation" && !$("report").srcdoc) {
      const response = await api("report");
      $("report").srcdoc = await response.text();  // sandboxed: no script of the report runs
    }
  });
}

start();
