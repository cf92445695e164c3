#!/usr/bin/env node
// Runs one session against a holodesk daemon with a fixed screenshot as the screen,
// printing each event as a JSON line and reporting every action as executed (a dry
// run: wire `execute` to a real input library to act). Exit 0 when it succeeded.
//
//   node bin/run-session.mjs --server 127.0.0.1:50051 --task "click OK" --image screen.png
import { pngFrame, runSession } from "../src/holodesk.mjs";
import { COMMON_HELP, fail, open, parse, usage } from "./cli.mjs";

const HELP = `usage: holodesk-run-session --server HOST:PORT --task TEXT --image PNG [options]

Runs one session against a holodesk daemon with a fixed screenshot as the screen,
printing each event as one JSON line and reporting every action as executed (a dry
run). Exits 0 when the session succeeded, 1 when it ended otherwise, 2 on usage
errors, 5 when the daemon could not be reached or refused the call.

  --task TEXT          what to do, in natural language
  --max-steps N        step limit (default: the daemon's)
  --policy NAME        the daemon's policy to use (default: the daemon's)
${COMMON_HELP}`;

const values = parse(
  {
    task: { type: "string" },
    "max-steps": { type: "string", default: "0" },
    policy: { type: "string", default: "" },
  },
  HELP,
);
if (!values.task) usage("give --task TEXT");
const { client, png, display } = open(values);
const print = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);

try {
  const ended = await runSession(client, {
    task: values.task,
    displays: [display],
    maxSteps: Number(values["max-steps"]),
    policy: values.policy,
    capture: (frameId) => pngFrame(frameId, png, display),
    execute: async (action) => print({ event: "execute", action }),
    onEvent: (event) => {
      if (event.event !== "actions") print(event);
    },
  });
  client.close();
  process.exit(ended.outcome === "SESSION_OUTCOME_SUCCEEDED" ? 0 : 1);
} catch (error) {
  client.close();
  fail(error);
}
