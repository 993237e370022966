// Builds public/vendor/msgpack.mjs: @msgpack/msgpack (the version package-lock.json pins)
// bundled into one readable ES module, with its licence beside it. Run by `make web-vendor`;
// `make web-check` builds it again into a temporary folder and compares, byte for byte.
//
//   node build-vendor.mjs [OUTPUT_DIR]      (default: public/vendor)
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const out = process.argv[2] ?? "public/vendor";
const pkg = JSON.parse(readFileSync("node_modules/@msgpack/msgpack/package.json", "utf8"));
mkdirSync(out, { recursive: true });
await build({
  entryPoints: ["vendor-entry.mjs"],
  bundle: true,
  format: "esm",
  target: "es2020",
  minify: false,
  legalComments: "inline",
  banner: {
    js: `// ${pkg.name} ${pkg.version} (${pkg.license} licence: msgpack.LICENSE.txt), ` +
      "bundled by web/build-vendor.mjs. Do not edit: run `make web-vendor`.",
  },
  outfile: join(out, "msgpack.mjs"),
  logLevel: "warning",
});
copyFileSync("node_modules/@msgpack/msgpack/LICENSE", join(out, "msgpack.LICENSE.txt"));
