// Command tlogcheck checks hookledger's transparency log with code we did not write: the Go
// checksum database's own golang.org/x/mod/sumdb/note and golang.org/x/mod/sumdb/tlog.
//
// It fetches <log>/checkpoint, opens the signed note with the given vkey, reads the tree's
// hash tiles over HTTP through tlog.TileHashReader (which authenticates every tile against the
// signed root), and checks records (their entries from the entry bundles), consistency with
// older trees, and optionally one offline proof file (c2sp.org/tlog-proof@v1).
//
//	tlogcheck -log http://127.0.0.1:PORT/log -vkey VKEY
//	          [-records all|i,j,…] [-old N,…] [-old-note FILE]… [-proof FILE [-row FILE]]
//
// One line per check ("ok …" or "FAIL …"); exit 0 when all pass, 1 when any fails, 2 on usage.
//
// Built in GOPATH mode against Debian's golang-golang-x-mod-dev (no module proxy needed):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= GOPROXY=off CGO_ENABLED=0 GOCACHE=$(mktemp -d) \
//		go build -o tlogcheck ./tests/go/tlogcheck
//
// (GOPATH mode builds a directory outside GOPATH as "_/<abs path>" and resolves its imports
// from GOPATH and GOROOT: golang.org/x/mod/sumdb/{note,tlog} need only the standard library.)
//
// C2SP tlog-tiles and the sumdb tiles hold the same hashes at the same places; only the paths
// differ. Go's Tile.Path() is tile/<H>/<L>/<N>[.p/<W>] (height in the path) and names the
// record tiles "data"; C2SP fixes the height at 8 and drops it, and names them "entries":
// tile/<L>/<N>[.p/<W>], tile/entries/<N>[.p/<W>]. c2spPath maps one to the other.
//
// The records are C2SP entries: an entry bundle is uint16-big-endian-length-prefixed entries,
// and a record's hash is tlog.RecordHash(entry) = SHA-256(0x00 ‖ entry).
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const tileHeight = 8

var failures int

func ok(format string, args ...interface{}) {
	fmt.Printf("ok   "+format+"\n", args...)
}

func fail(format string, args ...interface{}) {
	failures++
	fmt.Printf("FAIL "+format+"\n", args...)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	logURL := flag.String("log", "", "the log's prefix URL (…/log)")
	vkey := flag.String("vkey", "", "the log's verifier key (<origin>+<hex id>+<base64 key>)")
	records := flag.String("records", "", `record indexes to prove: "all" or a comma list (default: a few, at tile edges)`)
	olds := flag.String("old", "", "older tree sizes (comma list) to prove consistent with the current tree")
	var oldNotes multiFlag
	flag.Var(&oldNotes, "old-note", "an older checkpoint's signed note (file): its signed root is proved consistent (repeatable)")
	proofFile := flag.String("proof", "", "a .tlog-proof file (c2sp.org/tlog-proof@v1) to verify")
	rowFile := flag.String("row", "", "with -proof: the bytes the proven entry commits to (expected extra; entry = SHA-256 of them)")
	flag.Parse()
	if *logURL == "" || *vkey == "" || flag.NArg() != 0 || (*rowFile != "" && *proofFile == "") {
		fmt.Fprintln(os.Stderr, "usage: tlogcheck -log URL -vkey VKEY [-records all|i,j] [-old N,M] [-old-note FILE]… [-proof FILE [-row FILE]]")
		os.Exit(2)
	}
	base := strings.TrimSuffix(*logURL, "/")

	verifier, err := note.NewVerifier(*vkey)
	if err != nil {
		fail("vkey: %v", err)
		os.Exit(1)
	}
	verifiers := note.VerifierList(verifier)
	client := &client{base: base, http: &http.Client{Timeout: 15 * time.Second}, cache: map[string][]byte{}}

	// The newest checkpoint.
	raw, err := client.get("checkpoint")
	if err != nil {
		fail("checkpoint: %v", err)
		os.Exit(1)
	}
	tree, origin, err := openCheckpoint(raw, verifiers)
	if err != nil {
		fail("checkpoint: %v", err)
		os.Exit(1)
	}
	ok("checkpoint: note.Open verified %q's signature; size %d root %v", origin, tree.N, tree.Hash)
	if tree.N == 0 {
		fail("checkpoint: the tree is empty, nothing to check")
		os.Exit(1)
	}

	tiles := &tileReader{client: client}
	hr := tlog.TileHashReader(tree, tiles)

	// The root again, from the tiles, by tlog.TreeHash (TileHashReader authenticates the tiles it
	// reads against the signed root on every read; this is the explicit line for it).
	if th, err := tlog.TreeHash(tree.N, hr); err != nil {
		fail("tree %d: tlog.TreeHash over the tiles: %v", tree.N, err)
	} else if th != tree.Hash {
		fail("tree %d: tlog.TreeHash over the tiles = %v, the note signs %v", tree.N, th, tree.Hash)
	} else {
		ok("tree %d: tlog.TreeHash over %d hash tile(s) read equals the signed root", tree.N, len(tiles.paths))
	}

	// Records: each one's entry from its bundle, its hash where the tiles have it, a proof.
	indexes, err := recordIndexes(*records, tree.N)
	if err != nil {
		fmt.Fprintln(os.Stderr, "-records:", err)
		os.Exit(2)
	}
	entries := &entryReader{client: client, size: tree.N, bundles: map[int64][][]byte{}}
	proven := 0
	for _, i := range indexes {
		entry, err := entries.entry(i)
		if err != nil {
			fail("record %d: entry bundle: %v", i, err)
			continue
		}
		if len(entry) != sha256.Size {
			fail("record %d: entry is %d bytes, a commitment is 32", i, len(entry))
			continue
		}
		rh := tlog.RecordHash(entry)
		stored, err := hr.ReadHashes([]int64{tlog.StoredHashIndex(0, i)})
		if err != nil {
			fail("record %d: level-0 hash from the tiles: %v", i, err)
			continue
		}
		if stored[0] != rh {
			fail("record %d: tile holds %v, tlog.RecordHash(entry) = %v", i, stored[0], rh)
			continue
		}
		p, err := tlog.ProveRecord(tree.N, i, hr)
		if err != nil {
			fail("record %d: tlog.ProveRecord: %v", i, err)
			continue
		}
		if err := tlog.CheckRecord(p, tree.N, tree.Hash, i, rh); err != nil {
			fail("record %d: tlog.CheckRecord: %v", i, err)
			continue
		}
		proven++
		ok("record %d: entry %x… hashes to the tile's leaf; tlog.CheckRecord accepts tlog.ProveRecord's %d-hash proof into tree %d",
			i, entry[:4], len(p), tree.N)
	}
	if len(indexes) > 0 {
		ok("records: %d of %d proven, entry bundles read: %d", proven, len(indexes), len(entries.bundles))
	}

	// Consistency: older sizes (root from the current tiles), older signed notes (signed root).
	type older struct {
		n     int64
		hash  tlog.Hash
		label string
	}
	var olders []older
	if *olds != "" {
		for _, s := range strings.Split(*olds, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil || n < 1 {
				fmt.Fprintln(os.Stderr, "-old: not a tree size:", s)
				os.Exit(2)
			}
			if n > tree.N {
				fail("tree %d → %d: the older size is past the current tree", n, tree.N)
				continue
			}
			h, err := tlog.TreeHash(n, hr)
			if err != nil {
				fail("tree %d: tlog.TreeHash from the current tiles: %v", n, err)
				continue
			}
			olders = append(olders, older{n, h, "root from the current tiles"})
		}
	}
	for _, file := range oldNotes {
		text, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "-old-note:", err)
			os.Exit(2)
		}
		old, _, err := openCheckpoint(text, verifiers)
		if err != nil {
			fail("older checkpoint %s: %v", file, err)
			continue
		}
		if old.N > tree.N {
			fail("tree %d → %d: the older checkpoint is past the current tree", old.N, tree.N)
			continue
		}
		// The append-only check in its plainest form: the current tiles still give the old root.
		if h, err := tlog.TreeHash(old.N, hr); err != nil {
			fail("tree %d: tlog.TreeHash from the current tiles: %v", old.N, err)
		} else if h != old.Hash {
			fail("tree %d: the current tiles give %v, the older note signed %v", old.N, h, old.Hash)
		} else {
			ok("tree %d: the older signed note's root is what the current tiles give", old.N)
		}
		olders = append(olders, older{old.N, old.Hash, "signed root"})
	}
	for _, o := range olders {
		p, err := tlog.ProveTree(tree.N, o.n, hr)
		if err != nil {
			fail("tree %d → %d: tlog.ProveTree: %v", o.n, tree.N, err)
			continue
		}
		if err := tlog.CheckTree(p, tree.N, tree.Hash, o.n, o.hash); err != nil {
			fail("tree %d → %d: tlog.CheckTree (%s): %v", o.n, tree.N, o.label, err)
			continue
		}
		ok("tree %d → %d: tlog.CheckTree accepts tlog.ProveTree's %d-hash proof (%s)", o.n, tree.N, len(p), o.label)
	}

	if *proofFile != "" {
		checkProofFile(*proofFile, *rowFile, verifiers, tree, hr, entries)
	}

	fmt.Printf("%d failed\n", failures)
	if failures > 0 {
		os.Exit(1)
	}
}

// openCheckpoint opens a C2SP checkpoint note: note.Open with the known verifiers, then the body
// parsed by hand (tlog.ParseTree reads only the go.sum format, "go.sum database tree\n<N>\n<hash>\n"):
// origin line, decimal size, base64 root, optional extension lines. The origin must be the
// name of a key that signed it (the log's key name is its origin).
func openCheckpoint(msg []byte, verifiers note.Verifiers) (tlog.Tree, string, error) {
	n, err := note.Open(msg, verifiers)
	if err != nil {
		return tlog.Tree{}, "", fmt.Errorf("note.Open: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) < 3 {
		return tlog.Tree{}, "", errors.New("checkpoint body has fewer than 3 lines")
	}
	origin := lines[0]
	if origin == "" {
		return tlog.Tree{}, "", errors.New("empty origin line")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return tlog.Tree{}, "", fmt.Errorf("size line %q is not a canonical decimal", lines[1])
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil || root.String() != lines[2] {
		return tlog.Tree{}, "", fmt.Errorf("root line %q is not base64 of 32 bytes", lines[2])
	}
	signedByOrigin := false
	for _, s := range n.Sigs {
		if s.Name == origin {
			signedByOrigin = true
		}
	}
	if !signedByOrigin {
		return tlog.Tree{}, "", fmt.Errorf("verified only by keys not named %q (the origin)", origin)
	}
	return tlog.Tree{N: size, Hash: root}, origin, nil
}

// checkProofFile verifies an offline proof (c2sp.org/tlog-proof@v1): its note opened with the
// vkey, entry = SHA-256(extra), tlog.CheckRecord of its hashes against the note's root. Then, as
// cross-checks: the same proof from Go (tlog.ProveRecord over the live tiles) and the live entry.
func checkProofFile(path, rowPath string, verifiers note.Verifiers, current tlog.Tree, hr tlog.HashReader, entries *entryReader) {
	raw, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "-proof:", err)
		os.Exit(2)
	}
	p, err := parseTlogProof(string(raw))
	if err != nil {
		fail("proof file: %v", err)
		return
	}
	ok("proof file: parsed (index %d, %d hashes, extra %d bytes)", p.index, len(p.proof), len(p.extra))
	tree, _, err := openCheckpoint([]byte(p.note), verifiers)
	if err != nil {
		fail("proof file: its checkpoint: %v", err)
		return
	}
	ok("proof file: its checkpoint opens with the vkey (size %d)", tree.N)
	if p.index >= tree.N {
		fail("proof file: index %d is not below the tree size %d", p.index, tree.N)
		return
	}
	if rowPath != "" {
		row, err := os.ReadFile(rowPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "-row:", err)
			os.Exit(2)
		}
		if !bytes.Equal(row, p.extra) {
			fail("proof file: extra is not the expected row bytes (%d vs %d bytes)", len(p.extra), len(row))
		} else {
			ok("proof file: extra is the expected row's bytes")
		}
	}
	entry := sha256.Sum256(p.extra)
	if err := tlog.CheckRecord(p.proof, tree.N, tree.Hash, p.index, tlog.RecordHash(entry[:])); err != nil {
		fail("proof file: tlog.CheckRecord(SHA-256(extra)) at index %d in tree %d: %v", p.index, tree.N, err)
	} else {
		ok("proof file: tlog.CheckRecord accepts it: SHA-256(extra) is record %d of tree %d", p.index, tree.N)
	}
	if tree.N > current.N {
		fail("proof file: its tree (%d) is past the log's current one (%d)", tree.N, current.N)
		return
	}
	// RFC 6962 inclusion paths are unique: Go's own must be the same hashes, in the same order.
	if goProof, err := tlog.ProveRecord(tree.N, p.index, hr); err != nil {
		fail("proof file: tlog.ProveRecord(%d, %d): %v", tree.N, p.index, err)
	} else if !sameProof(goProof, p.proof) {
		fail("proof file: its hashes differ from tlog.ProveRecord(%d, %d) over the live tiles", tree.N, p.index)
	} else {
		ok("proof file: its %d hashes are exactly tlog.ProveRecord's over the live tiles", len(goProof))
	}
	if live, err := entries.entry(p.index); err != nil {
		fail("proof file: live entry %d: %v", p.index, err)
	} else if !bytes.Equal(live, entry[:]) {
		fail("proof file: the live entry bundle holds %x at %d, SHA-256(extra) is %x", live, p.index, entry[:])
	} else {
		ok("proof file: the live entry bundle holds SHA-256(extra) at index %d", p.index)
	}
}

func sameProof(a, b tlog.RecordProof) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type tlogProof struct {
	extra []byte
	index int64
	proof tlog.RecordProof
	note  string
}

// parseTlogProof reads c2sp.org/tlog-proof@v1: the header line, an optional "extra <base64>",
// "index <decimal>", one base64 hash per line (leaf's sibling first), an empty line, the note.
func parseTlogProof(text string) (*tlogProof, error) {
	split := strings.Index(text, "\n\n")
	if split < 0 {
		return nil, errors.New("no empty line before the checkpoint")
	}
	head := strings.Split(text[:split], "\n")
	out := &tlogProof{note: text[split+2:]}
	if head[0] != "c2sp.org/tlog-proof@v1" {
		return nil, fmt.Errorf("first line %q is not c2sp.org/tlog-proof@v1", head[0])
	}
	at := 1
	if at < len(head) && strings.HasPrefix(head[at], "extra ") {
		extra, err := base64.StdEncoding.Strict().DecodeString(strings.TrimPrefix(head[at], "extra "))
		if err != nil || len(extra) == 0 {
			return nil, errors.New("extra line is not base64 of some bytes")
		}
		out.extra = extra
		at++
	}
	if at >= len(head) || !strings.HasPrefix(head[at], "index ") {
		return nil, errors.New(`no "index N" line`)
	}
	digits := strings.TrimPrefix(head[at], "index ")
	index, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || index < 0 || strconv.FormatInt(index, 10) != digits {
		return nil, fmt.Errorf("index %q is not a canonical decimal", digits)
	}
	out.index = index
	for i, line := range head[at+1:] {
		h, err := tlog.ParseHash(line)
		if err != nil || h.String() != line {
			return nil, fmt.Errorf("hash line %d %q is not base64 of 32 bytes", i+1, line)
		}
		out.proof = append(out.proof, h)
	}
	return out, nil
}

func recordIndexes(spec string, size int64) ([]int64, error) {
	var out []int64
	seen := map[int64]bool{}
	add := func(i int64) {
		if i >= 0 && i < size && !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	switch spec {
	case "all":
		for i := int64(0); i < size; i++ {
			add(i)
		}
	case "":
		// Both ends, both sides of every tile edge the tree has, and one in the middle.
		add(0)
		for edge := int64(256); edge < size; edge += 256 {
			add(edge - 1)
			add(edge)
		}
		add(size / 2)
		add(size - 1)
	default:
		for _, s := range strings.Split(spec, ",") {
			i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil || i < 0 {
				return nil, fmt.Errorf("not a record index: %q", s)
			}
			if i >= size {
				return nil, fmt.Errorf("record %d is past the tree (size %d)", i, size)
			}
			add(i)
		}
	}
	return out, nil
}

// client fetches paths below the log's prefix, each once (tiles are immutable, and the
// TileHashReader re-authenticates what it is handed on every read, so a cache is safe).
type client struct {
	base  string
	http  *http.Client
	cache map[string][]byte
	// gets counts the HTTP requests made.
	gets int
}

func (c *client) get(path string) ([]byte, error) {
	if b, ok := c.cache[path]; ok && path != "checkpoint" {
		return b, nil
	}
	c.gets++
	res, err := c.http.Get(c.base + "/" + path)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<24))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, res.Status)
	}
	c.cache[path] = body
	return body, nil
}

// c2spPath maps Go's tile (tile/<H>/<L>/<N>[.p/<W>], L = "data" for records) to C2SP's
// (tile/<L>/<N>[.p/<W>], L = "entries" for records): the same <N> and .p/<W>, no height.
func c2spPath(t tlog.Tile) string {
	goPath := t.Path()
	rest := strings.TrimPrefix(goPath, fmt.Sprintf("tile/%d/", t.H))
	if rest == goPath {
		panic("unexpected Go tile path " + goPath)
	}
	if strings.HasPrefix(rest, "data/") {
		rest = "entries/" + strings.TrimPrefix(rest, "data/")
	}
	return "tile/" + rest
}

// tileReader is the tlog.TileReader over HTTP.
type tileReader struct {
	client *client
	paths  map[string]bool
}

func (r *tileReader) Height() int { return tileHeight }

func (r *tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	if r.paths == nil {
		r.paths = map[string]bool{}
	}
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		if t.H != tileHeight || t.L < 0 {
			return nil, fmt.Errorf("asked for tile %v, not a hash tile of height %d", t.Path(), tileHeight)
		}
		path := c2spPath(t)
		data, err := r.client.get(path)
		if err != nil {
			return nil, err
		}
		if len(data) != t.W*tlog.HashSize {
			return nil, fmt.Errorf("%s is %d bytes, a %d-hash tile is %d", path, len(data), t.W, t.W*tlog.HashSize)
		}
		r.paths[path] = true
		out[i] = data
	}
	return out, nil
}

// SaveTiles: nothing is kept beyond this run.
func (r *tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// entryReader reads entry bundles: the bundle of record i is tile/entries/<i/256>, partial at
// the tree's right edge with the width the tree's size implies.
type entryReader struct {
	client  *client
	size    int64
	bundles map[int64][][]byte
}

func (r *entryReader) entry(i int64) ([]byte, error) {
	n := i >> tileHeight
	bundle, ok := r.bundles[n]
	if !ok {
		width := r.size - n<<tileHeight
		if width > 1<<tileHeight {
			width = 1 << tileHeight
		}
		t := tlog.Tile{H: tileHeight, L: -1, N: n, W: int(width)}
		path := c2spPath(t)
		data, err := r.client.get(path)
		if err != nil {
			return nil, err
		}
		for len(data) > 0 {
			if len(data) < 2 {
				return nil, fmt.Errorf("%s: a truncated length prefix", path)
			}
			l := int(data[0])<<8 | int(data[1])
			if len(data) < 2+l {
				return nil, fmt.Errorf("%s: an entry of %d bytes runs past the bundle", path, l)
			}
			bundle = append(bundle, data[2:2+l])
			data = data[2+l:]
		}
		if len(bundle) != t.W {
			return nil, fmt.Errorf("%s holds %d entries, want %d", path, len(bundle), t.W)
		}
		r.bundles[n] = bundle
	}
	return bundle[i-n<<tileHeight], nil
}
