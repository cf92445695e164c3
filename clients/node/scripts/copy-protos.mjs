#!/usr/bin/env node
// prepack: the package carries the contract it loads (protos/holodesk/v1/*.proto),
// copied from the repository's protos/ folder, so an installed package needs nothing
// else. postpack (--remove) deletes the copy again: in a checkout the client loads
// protos/ at the repository root, the contract's one home, never a stale copy.
import { cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE = resolve(PACKAGE, "..", "..", "protos", "holodesk", "v1");
const TARGET = join(PACKAGE, "protos", "holodesk", "v1");

rmSync(join(PACKAGE, "protos"), { recursive: true, force: true });
if (!process.argv.includes("--remove")) {
  mkdirSync(TARGET, { recursive: true });
  for (const name of readdirSync(SOURCE).filter((file) => file.endsWith(".proto"))) {
    cpSync(join(SOURCE, name), join(TARGET, name));
  }
}
