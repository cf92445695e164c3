#!/usr/bin/env node
// Locates one or more described things in a screenshot (one request, one batch):
//
//   node bin/locate.mjs --server 127.0.0.1:50051 --image screen.png --describe "Submit button"
import { locate, pngFrame } from "../src/holodesk.mjs";
import { COMMON_HELP, fail, open, parse, usage } from "./cli.mjs";

const HELP = `usage: holodesk-locate --server HOST:PORT --image PNG --describe TEXT [...] [options]

Locates each described thing in the screenshot (one Locate call), printing one JSON
line per description: found, point and box in the image's pixels. Exits 0 when every
one was found, 1 otherwise, 2 on usage errors, 5 when the daemon could not be
reached or refused the call.

  --describe TEXT      what to find, e.g. "the Submit button" (repeatable)
  --policy NAME        the daemon's policy to use (default: the daemon's)
${COMMON_HELP}`;

const values = parse(
  { describe: { type: "string", multiple: true }, policy: { type: "string" } },
  HELP,
);
if (!values.describe?.length) usage("give --describe TEXT (repeatable)");
const { client, png, display } = open(values);
try {
  const locations = await locate(client, {
    frame: pngFrame("image", png, display),
    descriptions: values.describe,
    policy: values.policy ?? "",
  });
  for (const location of locations) process.stdout.write(`${JSON.stringify(location)}\n`);
  client.close();
  process.exit(locations.every((location) => location.found) ? 0 : 1);
} catch (error) {
  client.close();
  fail(error);
}
