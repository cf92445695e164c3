#!/usr/bin/env node
// Drives a desktop that `holodesk attach` lent to the daemon, through ComputerService
// (protos/holodesk/v1/computer.proto): an agent written in JavaScript, in one file.
//
//   node bin/drive-desktop.mjs --server 127.0.0.1:50051 --desktop my-host click:640,400 type:hello
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { act, connect, getFrame, listDesktops, readToken } from "../src/holodesk.mjs";
import { fail, usage } from "./cli.mjs";

const HELP = `usage: holodesk-drive-desktop --server HOST:PORT [--desktop NAME] [options] [ACTION ...]

Drives a desktop that \`holodesk attach\` lent to the daemon (ComputerService; the
operator or admin role). Prints one JSON line per event: the desktops this caller may
drive, the desktop's frame and its coordinate frame, then runs the ACTIONs in order in
one Act call (each with a fresh action id) and prints each result. Exits 0 when every
action ran OK, 1 when one did not, 2 on usage errors, 5 when the daemon could not be
reached or refused the call.

ACTIONs (points in the pixels of the frame printed first):
  click:X,Y            left click
  type:TEXT            type text (any Unicode)
  key:CHORD            a key chord, e.g. key:ctrl+a
  wait:MS              wait

  --desktop NAME       the desktop (default: the only one listed)
  --refresh            ask the desktop's client for a new capture first
  --save-frame FILE    write the frame's image there
  --server HOST:PORT   the daemon (default: $HOLODESK_SERVER)
  --token-file FILE    a file holding the bearer token the daemon asks for
  --ca-cert PEM        the CA that signed the daemon's TLS certificate (turns TLS on)
  -h, --help           this text`;

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      server: { type: "string", default: process.env.HOLODESK_SERVER },
      desktop: { type: "string" },
      refresh: { type: "boolean", default: false },
      "save-frame": { type: "string" },
      "token-file": { type: "string" },
      "ca-cert": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
} catch (error) {
  usage(`${error.message}\n\n${HELP}`);
}
const { values, positionals } = parsed;
if (values.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
if (!values.server) usage("give --server HOST:PORT (or set HOLODESK_SERVER)");

// One ACTION argument as a contract Action message (coordinates in `frameId`'s pixels).
function parseAction(text, frameId) {
  const colon = text.indexOf(":");
  const kind = colon < 0 ? text : text.slice(0, colon);
  const arg = colon < 0 ? "" : text.slice(colon + 1);
  const action = { action_id: randomUUID() };
  if (kind === "click") {
    const [x, y] = arg.split(",").map(Number);
    if (!Number.isFinite(x) || !Number.isFinite(y)) usage(`${text}: expected click:X,Y`);
    return { ...action, frame_id: frameId, click: { point: { x, y } } };
  }
  if (kind === "type") return { ...action, type_text: { text: arg } };
  if (kind === "key") {
    if (!arg) usage(`${text}: expected key:CHORD, e.g. key:ctrl+a`);
    return { ...action, key_chord: { keys: arg.split("+") } };
  }
  if (kind === "wait") {
    const ms = Number(arg);
    if (!Number.isInteger(ms) || ms < 0) usage(`${text}: expected wait:MILLISECONDS`);
    return { ...action, wait: { duration_ms: ms } };
  }
  return usage(`${text}: unknown action (click:X,Y, type:TEXT, key:CHORD, wait:MS)`);
}

const print = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const client = connect(values.server, {
  token: readToken(values["token-file"]),
  caCert: values["ca-cert"] ? readFileSync(values["ca-cert"]) : undefined,
});
try {
  const desktops = await listDesktops(client);
  print({
    event: "desktops",
    desktops: desktops.map(({ desktop_id, owner, attached }) => ({ desktop_id, owner, attached })),
  });
  let desktopId = values.desktop;
  if (!desktopId) {
    if (desktops.length !== 1) usage(`${desktops.length} desktops are listed: give --desktop NAME`);
    desktopId = desktops[0].desktop_id;
  }
  const frame = await getFrame(client, { desktopId, refresh: values.refresh });
  const { frame_id, size, source, display_id, scale_factor, encoding } = frame;
  print({
    event: "frame",
    ...{ desktop_id: desktopId, frame_id, size, source, display_id, scale_factor, encoding },
  });
  if (values["save-frame"]) writeFileSync(values["save-frame"], frame.data);
  let allOk = true;
  if (positionals.length) {
    const actions = positionals.map((text) => parseAction(text, frame_id));
    const response = await act(client, { desktopId, actions });
    response.results.forEach((result, index) => {
      allOk &&= result.status === "ACTION_STATUS_OK";
      print({ event: "result", action: positionals[index], ...result });
    });
    print({ event: "done", frame_id: response.frame_id });
  }
  client.close();
  process.exit(allOk ? 0 : 1);
} catch (error) {
  client.close();
  fail(error);
}
