// hub_peer.mjs — the @huggingface/hub npm client as qserve's peer on one Hugging Face cache
// (test_hub.sh, against tests/cli/fake_hub_server.py on loopback):
//   node hub_peer.mjs HUB_URL CACHE_DIR snapshot REPO   snapshotDownload into CACHE_DIR; prints the folder
//   node hub_peer.mjs HUB_URL CACHE_DIR read REPO COMMIT FILE...
//       downloadFileToCacheDir of each FILE at COMMIT (a cached file is answered from the cache
//       without a request), then scanCacheDir; prints one JSON line {paths, repos}
import { snapshotDownload, downloadFileToCacheDir, scanCacheDir } from "@huggingface/hub";

const [hubUrl, cacheDir, mode, repo, commit, ...files] = process.argv.slice(2);
const timer = setTimeout(() => { console.error("hub_peer: timed out"); process.exit(3); }, 60_000);
try {
  if (mode === "snapshot") {
    console.log(await snapshotDownload({ repo, cacheDir, hubUrl }));
  } else if (mode === "read") {
    const paths = [];
    for (const path of files)
      paths.push(await downloadFileToCacheDir({ repo, path, revision: commit, cacheDir, hubUrl }));
    const scan = await scanCacheDir(cacheDir);
    const repos = scan.repos.map((r) => ({
      id: r.id.name, revisions: r.revisions.map((v) => ({ commit: v.commitOid, refs: v.refs, files: v.files.length })),
    }));
    console.log(JSON.stringify({ paths, repos, warnings: scan.warnings.map(String) }));
  } else {
    throw new Error(`unknown mode '${mode}'`);
  }
} catch (e) {
  console.error(`hub_peer: ${e.stack || e}`);
  process.exit(1);
}
clearTimeout(timer);
