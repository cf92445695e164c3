#!/usr/bin/env node
// Locates one or more described things in a screenshot (one request, one batch):
//
//   node bin/locate.mjs --server 127.0.0.1:50051 --image screen.png --describe "Submit button"
import { locate, pngFrame } from "../src/holodesk.mjs";
import { fail, open, parse, usage } from "./cli.mjs";

const values = parse({ describe: { type: "string", multiple: true }, policy: { type: "string" } });
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
