// holodesk client for Node.js: the daemon's contract (protos/holodesk/v1) loaded at
// run time with @grpc/proto-loader, a session loop and Locate. Capturing the screen
// and executing actions are the caller's: pass `capture` and `execute`.

import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const HERE = dirname(fileURLToPath(import.meta.url));
// $HOLODESK_PROTO_ROOT, else the contract the installed package carries (copied in
// when it is packed), else the repository's protos/ folder (a checkout).
const PACKAGED_PROTOS = resolve(HERE, "..", "protos");
export const DEFAULT_PROTO_ROOT =
  process.env.HOLODESK_PROTO_ROOT ??
  (existsSync(resolve(PACKAGED_PROTOS, "holodesk", "v1", "agent.proto"))
    ? PACKAGED_PROTOS
    : resolve(HERE, "..", "..", "..", "protos"));

const TERMINAL = new Set(["done", "fail"]);

export function loadContract(protoRoot = DEFAULT_PROTO_ROOT) {
  const definition = protoLoader.loadSync(
    [
      "holodesk/v1/agent.proto",
      "holodesk/v1/control.proto",
      "holodesk/v1/computer.proto",
      "holodesk/v1/trainer.proto",
    ],
    {
      includeDirs: [protoRoot],
      keepCase: true, // field names exactly as in the .proto files
      enums: String, // "IMAGE_ENCODING_PNG" rather than 1
      longs: String,
      defaults: true,
      oneofs: true, // action.kind names the set member of the oneof
    },
  );
  return grpc.loadPackageDefinition(definition).holodesk.v1;
}

// Opens stubs for every service. `token` is sent as `authorization: Bearer` on every
// call; `caCert` (PEM bytes) switches to TLS.
export function connect(address, { token, caCert, protoRoot } = {}) {
  const v1 = loadContract(protoRoot);
  const credentials = caCert
    ? grpc.credentials.createSsl(caCert)
    : grpc.credentials.createInsecure();
  const options = {
    "grpc.max_send_message_length": 64 * 1024 * 1024,
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
  };
  const metadata = () => {
    const md = new grpc.Metadata();
    if (token) md.set("authorization", `Bearer ${token}`);
    return md;
  };
  return {
    agent: new v1.AgentService(address, credentials, options),
    control: new v1.ControlService(address, credentials, options),
    // Drives desktops that `holodesk attach` lent (operator or admin role).
    computer: new v1.ComputerService(address, credentials, options),
    // Changes a policy's weights while its sessions run (trainer or admin role).
    trainer: new v1.TrainerService(address, credentials, options),
    metadata,
    close() {
      this.agent.close();
      this.control.close();
      this.computer.close();
      this.trainer.close();
    },
  };
}

// The pixel size of a PNG, from its IHDR chunk.
export function pngSize(png) {
  const signature = "89504e470d0a1a0a";
  if (png.length < 24 || png.subarray(0, 8).toString("hex") !== signature) {
    throw new Error("not a PNG file");
  }
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

// A frame message for a PNG of a whole display whose pixels are the display's own.
export function pngFrame(frameId, png, display) {
  const { width, height } = pngSize(png);
  return {
    frame_id: frameId,
    size: { width, height },
    encoding: "IMAGE_ENCODING_PNG",
    data: png,
    display_id: display.display_id,
    source: display.bounds,
    scale_factor: display.scale_factor,
  };
}

// Runs one session. `capture()` returns a Frame message (e.g. from pngFrame);
// `execute(action)` performs one action and returns "ok" or throws to fail it.
// Resolves with {outcome, answer, reason, steps, sessionId}; rejects on a gRPC error.
export function runSession(
  client,
  { task, displays, capture, execute, maxSteps = 0, policy = "", onEvent = () => {} },
) {
  return new Promise((resolvePromise, reject) => {
    const call = client.agent.RunSession(client.metadata());
    let frames = 0;
    let sessionId = "";
    let ended = null;
    const nextFrame = async () => {
      frames += 1;
      return capture(`node-${frames}`);
    };
    const send = (event) => call.write(event);

    call.on("data", async (message) => {
      try {
        if (message.event === "started") {
          sessionId = message.started.session_id;
          onEvent({ event: "started", sessionId, frameSpec: message.started.frame_spec });
          send({ observation: { frame: await nextFrame() } });
        } else if (message.event === "actions") {
          const { step, actions, thought } = message.actions;
          onEvent({ event: "actions", step, thought, actions });
          const results = [];
          let failed = false;
          for (const action of actions) {
            if (failed) {
              results.push({ action_id: action.action_id, status: "ACTION_STATUS_SKIPPED" });
            } else if (TERMINAL.has(action.kind)) {
              results.push({ action_id: action.action_id, status: "ACTION_STATUS_OK" });
            } else {
              try {
                await execute(action);
                results.push({ action_id: action.action_id, status: "ACTION_STATUS_OK" });
              } catch (error) {
                failed = true;
                results.push({
                  action_id: action.action_id,
                  status: "ACTION_STATUS_FAILED",
                  error: String(error?.message ?? error),
                });
              }
            }
          }
          const terminal = actions.some((action) => TERMINAL.has(action.kind));
          const observation = { results };
          if (!terminal) observation.frame = await nextFrame();
          send({ observation });
        } else if (message.event === "ended") {
          ended = {
            outcome: message.ended.outcome,
            answer: message.ended.answer,
            reason: message.ended.reason,
            steps: message.ended.steps,
            sessionId,
          };
          onEvent({ event: "ended", ...ended });
          call.end();
        }
      } catch (error) {
        call.cancel();
        reject(error);
      }
    });
    call.on("error", (error) => {
      if (!ended) reject(error);
    });
    call.on("end", () => {
      if (ended) resolvePromise(ended);
      else reject(new Error("the daemon closed the stream before the session ended"));
    });
    send({
      start: {
        task,
        displays,
        encodings: ["IMAGE_ENCODING_PNG"],
        max_steps: maxSteps,
        policy,
        client: { os: process.platform, backend: "node", client_version: "0.1.0" },
      },
    });
  });
}

// Where are these things in the image? One request, one model batch.
export function locate(client, { frame, descriptions, policy = "" }) {
  return new Promise((resolvePromise, reject) => {
    client.agent.Locate(
      { frame, descriptions, policy },
      client.metadata(),
      (error, response) => (error ? reject(error) : resolvePromise(response.locations)),
    );
  });
}

export function readToken(path) {
  return path ? readFileSync(path, "utf8").trim() : undefined;
}


// ComputerService (protos/holodesk/v1/computer.proto): drive a desktop a holodesk
// client attached (`holodesk attach --name NAME`). Each resolves with the response
// message and rejects with the gRPC error (its `code` and `details` say why).
function unary(client, method, request) {
  return new Promise((resolvePromise, reject) => {
    client.computer[method](request, client.metadata(), (error, response) =>
      error ? reject(error) : resolvePromise(response),
    );
  });
}

// The attached desktops this caller may drive: [{desktop_id, owner, displays, frame_id, ...}].
export async function listDesktops(client) {
  return (await unary(client, "ListDesktops", {})).desktops;
}

// The desktop's latest frame (refresh: a new capture first), with its coordinate frame.
export async function getFrame(client, { desktopId, refresh = false }) {
  return (await unary(client, "GetFrame", { desktop_id: desktopId, refresh })).frame;
}

// Runs actions on the desktop in order; each needs its own action_id (a repeated id
// returns its first result and never runs again). Resolves with {results, frame_id, frame}.
export function act(client, { desktopId, actions, includeFrame = false }) {
  return unary(client, "Act", { desktop_id: desktopId, actions, include_frame: includeFrame });
}
