// `primes`: an example third-party Cordon tool written in JavaScript.
//
// It lists the prime numbers in a range, one JSON item per prime:
//
//     {"index": 0, "prime": 2}
//     {"index": 1, "prime": 3}
//     ...
//
// It touches no files (manifest access `none`, so the host grants it no
// directories), which keeps the example about the contract itself: the
// manifest, argument checks, one item per chunk within the host's budget,
// splitting an item that is larger than the budget, and exact resume
// positions. Copy this file to start your own tool.
//
// The contract is `wit/tool.wit` at the root of the Cordon repository (world
// `cordon-tool`). componentize-js (a SpiderMonkey JavaScript engine compiled
// to WebAssembly) maps it to JavaScript like this:
//
// - the exported interface `tool` is the object exported as `tool` below:
//   `describe()`, `open(args, resume)` and the resource `chunk-stream` as the
//   class `ChunkStream`;
// - records are plain objects with camelCase fields (`input-schema` is
//   `inputSchema`), enums are strings ('none', 'invalid-argument'), a variant
//   is `{tag, val}`, an `option` is a value or `undefined`, `u32` is a number
//   and `u64` a BigInt;
// - a function returning `result<T, error>` returns T for `ok` and throws for
//   `err` (see `ToolError` below);
// - the imported interface `progress` is a module, imported as
//   'cordon:tool/progress@0.1.0'.
//
// Cordon pages the output, not the tool: after every chunk the tool only says
// where it would start again (`chunk.resume`). The host keeps the stream alive
// between pages; when it is gone (evicted, expired, server restarted) the host
// calls `open(args, resume)` again, and the tool must then yield exactly the
// chunks that would have followed.

import { report } from 'cordon:tool/progress@0.1.0';

/** The tool's version, bound into every cursor: bump it when the output changes. */
const VERSION = '0.1.0';

/** The largest `below` accepted: the sieve's base primes stay small and a call stays quick. */
const MAX_BELOW = 10_000_000;

/** Numbers sieved at once: the memory a stream holds. */
const SEGMENT = 1 << 16;

/** Report progress every this many primes. */
const PROGRESS_EVERY = 1024;

const INPUT_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    below: {
      type: 'integer',
      minimum: 2,
      maximum: MAX_BELOW,
      description: 'List the primes smaller than this number (2 to 10,000,000).',
    },
    from: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_BELOW,
      default: 2,
      description: 'Start at this number (inclusive; default 2). Must be smaller than `below`.',
    },
  },
  required: ['below'],
  additionalProperties: false,
};

/** What `info()` returns: the arguments and how many primes the stream has produced so far. */
const OUTPUT_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    below: { type: 'integer', description: 'The upper bound (exclusive).' },
    from: { type: 'integer', description: 'The lower bound (inclusive).' },
    emitted: {
      type: 'integer',
      description: 'Primes produced so far (whole items, from `from` on); the host may hold the last one for the next page.',
    },
  },
  required: ['below', 'from', 'emitted'],
  additionalProperties: false,
};

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/**
 * A tool error: a flat `error-code` from the WIT (`invalid-argument`, `stale`,
 * ...) and a sentence for people. When a function that returns
 * `result<_, error>` throws, componentize-js returns `err(e.payload)` if the
 * thrown value has its own `payload` property, so the WIT `error` record goes
 * there. Any other `Error` (a bug, such as a TypeError), like an unknown code,
 * traps: the host drops the instance and answers with an internal error,
 * without details.
 */
class ToolError extends Error {
  constructor(code, message) {
    super(message);
    this.payload = { code, message };
  }
}

const invalid = (message) => new ToolError('invalid-argument', message);

// ---------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------

/**
 * Parses the arguments. The host has already validated them against
 * INPUT_SCHEMA, but a tool checks again: the schema is advice to clients, the
 * tool is where the rules live.
 */
function parseArgs(text) {
  let args;
  try {
    args = JSON.parse(text);
  } catch {
    throw invalid('The arguments are not valid JSON.');
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw invalid('The arguments must be a JSON object such as {"below": 100}.');
  }
  for (const key of Object.keys(args)) {
    if (key !== 'below' && key !== 'from') {
      throw invalid(`Unknown argument \`${key}\`; \`primes\` takes \`below\` and optionally \`from\`.`);
    }
  }
  const integer = (name, value, min, max) => {
    if (!Number.isInteger(value) || value < min || value > max) {
      throw invalid(`\`${name}\` must be an integer from ${min} to ${max}; got ${JSON.stringify(value)}.`);
    }
    return value;
  };
  if (args.below === undefined) {
    throw invalid('`below` is required: the primes smaller than which number?');
  }
  const below = integer('below', args.below, 2, MAX_BELOW);
  const from = args.from === undefined ? 2 : integer('from', args.from, 0, MAX_BELOW);
  if (from >= below) {
    throw invalid(`\`from\` (${from}) must be smaller than \`below\` (${below}).`);
  }
  return { below, from };
}

// ---------------------------------------------------------------------------
// The item source: primes from a position, by a segmented sieve
// ---------------------------------------------------------------------------

/**
 * The primes in [start, below), in order. Opening it at any number costs the
 * same (base primes up to sqrt(below), then one segment), so a page costs the
 * page, not its offset: that is what makes reopening at `resume` cheap.
 */
class PrimeSource {
  constructor(start, below) {
    this.below = below;
    this.base = basePrimes(Math.floor(Math.sqrt(below - 1)));
    this.segmentStart = start; // the first number of the current segment
    this.segment = new Uint8Array(0); // 1 = composite, for segmentStart + i
    this.scan = 0; // the next index in `segment` to look at
  }

  /** The next prime, or `undefined` at the end. */
  next() {
    for (;;) {
      while (this.scan < this.segment.length) {
        const i = this.scan++;
        if (this.segment[i] === 0) return this.segmentStart + i;
      }
      const from = this.segmentStart + this.segment.length;
      if (from >= this.below) return undefined;
      this.sieve(from, Math.min(from + SEGMENT, this.below));
    }
  }

  /** Marks the composites (and 0 and 1) in [lo, hi). */
  sieve(lo, hi) {
    const seg = new Uint8Array(hi - lo);
    for (let n = lo; n < Math.min(hi, 2); n++) seg[n - lo] = 1;
    for (const p of this.base) {
      if (p * p >= hi) break;
      let m = Math.max(p * p, Math.ceil(lo / p) * p);
      for (; m < hi; m += p) seg[m - lo] = 1;
    }
    this.segmentStart = lo;
    this.segment = seg;
    this.scan = 0;
  }
}

/** The primes up to `max` inclusive (at most 3,162 for `below` = 10,000,000). */
function basePrimes(max) {
  const composite = new Uint8Array(max + 1);
  const primes = [];
  for (let n = 2; n <= max; n++) {
    if (composite[n]) continue;
    primes.push(n);
    for (let m = n * n; m <= max; m += n) composite[m] = 1;
  }
  return primes;
}

// ---------------------------------------------------------------------------
// Resume positions
// ---------------------------------------------------------------------------
//
// A resume position is opaque to the host; this tool writes a small JSON
// object: {"next": N, "index": I, "offset": K}
//   next   - the number the search for the next item starts at,
//   index  - that item's index,
//   offset - how many bytes of that item were already sent (0 between items;
//            more when a large item was split and the stream stopped inside it).
// This mirrors the Rust SDK (`tools/sdk/src/items.rs`): a position is the
// source position before an item plus an offset into it.

function encodePosition(next, index, offset) {
  return JSON.stringify({ next, index, offset });
}

function decodePosition(text, args) {
  const bad = () => invalid(`Malformed resume position ${JSON.stringify(text)}; start the call again.`);
  let pos;
  try {
    pos = JSON.parse(text);
  } catch {
    throw bad();
  }
  if (pos === null || typeof pos !== 'object') throw bad();
  const { next, index, offset } = pos;
  if (![next, index, offset].every(Number.isSafeInteger) || index < 0 || offset < 0) throw bad();
  if (next < args.from || next > args.below) throw bad();
  return { next, index, offset };
}

// ---------------------------------------------------------------------------
// UTF-8: the budget counts bytes, JavaScript strings count UTF-16 units
// ---------------------------------------------------------------------------

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The end of the next piece of `bytes` starting at `start`: at most `limit`
 * bytes on, moved back to a character boundary (a byte that is not a UTF-8
 * continuation byte 0b10xxxxxx). `limit` is at least 4, so a piece is never
 * empty.
 */
function pieceEnd(bytes, start, limit) {
  let end = Math.min(start + limit, bytes.length);
  while (end < bytes.length && (bytes[end] & 0xc0) === 0x80) end--;
  return end;
}

// ---------------------------------------------------------------------------
// The stream
// ---------------------------------------------------------------------------

/**
 * The output of one call. `next(budget)` returns one whole item, or the next
 * piece of an item larger than `budget.bytes`.
 */
class ChunkStream {
  constructor(args, resume) {
    this.args = args;
    const start = resume === undefined ? { next: args.from, index: 0, offset: 0 } : decodePosition(resume, args);
    this.source = new PrimeSource(start.next, args.below);
    this.before = start.next; // the source position before the next item
    this.index = start.index; // the next item's index = whole items emitted before it
    this.done = false;
    this.lastReport = -1;
    // An item being sent in pieces: {bytes (its UTF-8), after (the source
    // position after it), sent (how many bytes went out already)}.
    this.partial = undefined;
    if (start.offset > 0) {
      // Reopened inside an item: produce that item again and skip what was sent.
      const item = this.nextItem();
      const bytes = item === undefined ? undefined : encoder.encode(item.text);
      if (bytes === undefined || start.offset >= bytes.length || (bytes[start.offset] & 0xc0) === 0x80) {
        throw new ToolError('stale', 'The resume position no longer falls inside its item; start the call again.');
      }
      this.partial = { bytes, after: item.after, sent: start.offset };
    }
  }

  /** The next item as JSON text and the source position after it, or `undefined` at the end. */
  nextItem() {
    const prime = this.source.next();
    if (prime === undefined) {
      this.reportProgress(this.args.below, this.index);
      return undefined;
    }
    if (this.index % PROGRESS_EVERY === 0) this.reportProgress(prime + 1, this.index + 1);
    return { text: JSON.stringify({ index: this.index, prime }), after: prime + 1 };
  }

  /**
   * `chunk-stream.next`: `budget` is `{bytes, items}` (`items` is at least 1,
   * and a chunk here always holds one item or a piece of one). Returns a
   * chunk, or `undefined` once the output is complete.
   */
  next(budget) {
    const limit = Math.max(budget.bytes, 4);
    if (this.partial === undefined) {
      const item = this.nextItem();
      if (item === undefined) {
        this.done = true;
        return undefined;
      }
      // The common case, without encoding: a UTF-16 unit is at most 3 UTF-8
      // bytes, so a text of at most limit/3 units surely fits.
      if (item.text.length * 3 <= limit) return this.whole(item.text, item.after);
      const bytes = encoder.encode(item.text);
      if (bytes.length <= limit) return this.whole(item.text, item.after);
      // Larger than the budget: send it in pieces, starting now.
      this.partial = { bytes, after: item.after, sent: 0 };
    }
    const { bytes, after, sent } = this.partial;
    const end = pieceEnd(bytes, sent, limit);
    const piece = decoder.decode(bytes.subarray(sent, end));
    if (end < bytes.length) {
      // More of this item follows: resume inside it, `end` bytes in.
      this.partial.sent = end;
      return chunk(piece, true, encodePosition(this.before, this.index, end));
    }
    this.partial = undefined;
    return this.whole(piece, after);
  }

  /** A chunk that completes an item: resume at the boundary after it. */
  whole(text, after) {
    this.before = after;
    this.index += 1;
    return chunk(text, false, encodePosition(this.before, this.index, 0));
  }

  /** `chunk-stream.info`: metadata matching OUTPUT_SCHEMA, as JSON text. */
  info() {
    return JSON.stringify({ below: this.args.below, from: this.args.from, emitted: this.index });
  }

  /** `chunk-stream.summary`: cheap totals (never scans ahead) and ways to narrow the call. */
  summary() {
    return {
      totals: JSON.stringify({ emitted: this.index }),
      exact: this.done,
      suggestions: ['Lower `below` (or raise `from`) for fewer results.'],
    };
  }

  /** `chunk-stream.fingerprint`: none, this stream pages no file. */
  fingerprint() {
    return undefined;
  }

  /**
   * Tells the host how far the call has come: the numbers below `upTo` are
   * done, `found` primes among them (counted from `from`). Optional, and
   * cheap: the host turns reports into MCP progress notifications (at most one
   * every 100 ms) for clients that asked for them, and drops the rest.
   */
  reportProgress(upTo, found) {
    const done = upTo - this.args.from;
    if (done <= this.lastReport) return;
    this.lastReport = done;
    report(BigInt(done), BigInt(this.args.below - this.args.from), `${found} primes up to ${upTo}`);
  }
}

/** A WIT `chunk` carrying one item (or a piece of one). It pages no file, so no span. */
function chunk(text, continued, resume) {
  return { payload: { tag: 'item', val: text }, span: undefined, continued, resume };
}

// ---------------------------------------------------------------------------
// The exported interface
// ---------------------------------------------------------------------------

export const tool = {
  /** Called once when the host loads the tool; touches nothing. */
  describe() {
    return {
      name: 'primes',
      version: VERSION,
      title: 'Prime numbers',
      description:
        'Lists the prime numbers from `from` (default 2) up to but not including `below` ' +
        '(at most 10,000,000), one JSON item per prime: {"index": i, "prime": p}. Touches no files.',
      inputSchema: JSON.stringify(INPUT_SCHEMA),
      outputSchema: JSON.stringify(OUTPUT_SCHEMA),
      access: 'none',
      readOnly: true,
      destructive: false,
      idempotent: true,
    };
  },

  /** Starts a call at the beginning (`resume` undefined) or at a position from an earlier chunk. */
  open(args, resume) {
    return new ChunkStream(parseArgs(args), resume);
  },

  ChunkStream,
};
