// Shared argument handling of the example commands.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { connect, pngSize, readToken } from "../src/holodesk.mjs";

// The options every command takes, for its --help.
export const COMMON_HELP = `  --server HOST:PORT   the daemon (default: $HOLODESK_SERVER)
  --token-file FILE    a file holding the bearer token the daemon asks for
  --ca-cert PEM        the CA that signed the daemon's TLS certificate (turns TLS on)
  --image PNG          the screenshot that stands in for the screen
  -h, --help           this text`;

export function parse(options, help) {
  let values;
  try {
    values = parseArgs({
      options: {
        server: { type: "string", default: process.env.HOLODESK_SERVER },
        "token-file": { type: "string" },
        "ca-cert": { type: "string" },
        image: { type: "string" },
        help: { type: "boolean", short: "h" },
        ...options,
      },
    }).values;
  } catch (error) {
    usage(`${error.message}\n\n${help}`);
  }
  if (values.help) {
    process.stdout.write(`${help}\n`);
    process.exit(0);
  }
  return values;
}

export function usage(message) {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

export function open(values) {
  if (!values.server) usage("give --server HOST:PORT (or set HOLODESK_SERVER)");
  if (!values.image) usage("give --image SCREENSHOT.png");
  let png, width, height;
  try {
    png = readFileSync(values.image);
    ({ width, height } = pngSize(png));
  } catch (error) {
    usage(`${values.image}: ${error.message}`);
  }
  const display = {
    display_id: "0",
    bounds: { x: 0, y: 0, width, height },
    scale_factor: 1,
    primary: true,
    name: values.image,
  };
  const client = connect(values.server, {
    token: readToken(values["token-file"]),
    caCert: values["ca-cert"] ? readFileSync(values["ca-cert"]) : undefined,
  });
  return { client, png, display };
}

export function fail(error) {
  // gRPC errors carry their status name and the daemon's message.
  const code = error.code !== undefined ? ` (${statusName(error.code)})` : "";
  process.stderr.write(`holodesk: ${error.details ?? error.message}${code}\n`);
  process.exit(5);
}

function statusName(code) {
  const names = [
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
  ];
  return names[code] ?? String(code);
}
