// Small sample repositories, one per build-plan stack, written to disk for the engine tests and
// `npm run bench:build`. Each answers GET `path` with `body` once built by its generated plan.
// The node samples have real dependencies from the npm registry, locked at test time by the host's
// npm; the package indexes of python (PyPI) and ruby (rubygems) are not reachable from this
// machine, so those samples use the standard library only, behind an empty requirements.txt and a
// Gemfile without gems; the go sample has no modules; the php one autoloads its own class.
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export type SampleName = 'node' | 'node-static' | 'python' | 'go' | 'static' | 'php' | 'ruby';
export const SAMPLES: SampleName[] = ['node', 'node-static', 'python', 'go', 'static', 'php', 'ruby'];

export interface Sample {
  name: SampleName;
  /** The stack the plan must choose. */
  stack: 'node' | 'python' | 'go' | 'static' | 'php' | 'ruby';
  files: Record<string, string>;
  path: string;
  body: string;
  /** Programs the final image must not have: the build stage's tools. */
  absent: string[];
  /** Files of the final image that must not exist (dev dependencies, dotfiles). */
  absentFiles: string[];
  /** Whether the sample's lock file is made by the registry's client after the files are written. */
  npmLock: boolean;
  /** A source file the bench edits to rebuild with unchanged dependencies. */
  source: string;
}

const NODE_SERVER = `const http = require('node:http');
const ms = require('ms');
const escape = require('escape-html');
http
  .createServer((req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(\`node sample: \${ms(90000)} \${escape('<ok>')}\\n\`);
  })
  .listen(Number(process.env.PORT));
`;

const PY_APP = `import os
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"python sample: stdlib only\\n"
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


HTTPServer(("0.0.0.0", int(os.environ["PORT"])), Handler).serve_forever()
`;

const GO_MAIN = `package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/plain")
		fmt.Fprintln(w, "go sample: static binary")
	})
	if err := http.ListenAndServe(":"+os.Getenv("PORT"), nil); err != nil {
		panic(err)
	}
}
`;

const RUBY_APP = `require "socket"

# A stand-alone HTTP answer on the standard library: rubygems is unreachable, so no rack or puma.
port = Integer(ARGV[ARGV.index("-p") + 1])
host = ARGV.include?("-o") ? ARGV[ARGV.index("-o") + 1] : "0.0.0.0"
server = TCPServer.new(host, port)
$stdout.sync = true
loop do
  client = server.accept
  while (line = client.gets) && line != "\\r\\n"; end
  body = "ruby sample: #{RUBY_ENGINE}\\n"
  client.write "HTTP/1.1 200 OK\\r\\ncontent-type: text/plain\\r\\ncontent-length: #{body.bytesize}\\r\\nconnection: close\\r\\n\\r\\n#{body}"
  client.close
end
`;

export function sample(name: SampleName): Sample {
  const common = { absentFiles: [] as string[], npmLock: false };
  switch (name) {
    case 'node':
      return {
        ...common,
        name,
        stack: 'node',
        npmLock: true,
        files: {
          'package.json': JSON.stringify(
            {
              name: 'svc-node-sample',
              version: '1.0.0',
              private: true,
              scripts: { start: 'node server.js' },
              engines: { node: '>=20' },
              dependencies: { ms: '^2.1.3', 'escape-html': '^1.0.3' },
              devDependencies: { 'is-number': '^7.0.0' },
            },
            null,
            2,
          ),
          'server.js': NODE_SERVER,
        },
        path: '/',
        body: 'node sample: 2m &lt;ok&gt;\n',
        absent: [],
        absentFiles: ['/app/node_modules/is-number'],
        source: 'server.js',
      };
    case 'node-static':
      return {
        ...common,
        name,
        stack: 'static',
        npmLock: true,
        files: {
          'package.json': JSON.stringify(
            {
              name: 'svc-static-sample',
              version: '1.0.0',
              private: true,
              scripts: { build: 'node build.mjs' },
              devDependencies: { marked: '^12.0.0' },
            },
            null,
            2,
          ),
          'build.mjs': `import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { marked } from 'marked';
mkdirSync('dist', { recursive: true });
writeFileSync('dist/index.html', marked.parse(readFileSync('page.md', 'utf8')));
`,
          'page.md': '**built** by marked\n',
        },
        path: '/',
        body: '<p><strong>built</strong> by marked</p>\n',
        absent: ['node', 'npm'],
        absentFiles: ['/srv/node_modules', '/srv/package.json'],
        source: 'page.md',
      };
    case 'python':
      return {
        ...common,
        name,
        stack: 'python',
        files: {
          'requirements.txt':
            '# standard library only: the package index is not reachable from the test machine\n',
          'app.py': PY_APP,
        },
        path: '/',
        body: 'python sample: stdlib only\n',
        absent: ['gcc', 'cc'],
        absentFiles: [],
        source: 'app.py',
      };
    case 'go':
      return {
        ...common,
        name,
        stack: 'go',
        files: { 'go.mod': 'module example.com/sample\n\ngo 1.21\n', 'main.go': GO_MAIN },
        path: '/',
        body: 'go sample: static binary\n',
        absent: ['go', 'gcc', 'sh'],
        absentFiles: ['/usr/local/go', '/src'],
        source: 'main.go',
      };
    case 'static':
      return {
        ...common,
        name,
        stack: 'static',
        files: {
          'index.html': '<!doctype html><title>static</title><p>static sample</p>\n',
          'style.css': 'p { color: teal }\n',
          '.env': 'SECRET=never-served\n',
        },
        path: '/',
        body: '<!doctype html><title>static</title><p>static sample</p>\n',
        absent: [],
        absentFiles: ['/srv/.env'],
        source: 'index.html',
      };
    case 'php':
      return {
        ...common,
        name,
        stack: 'php',
        files: {
          // Packagist is not consulted: the sample needs no package, only Composer's autoloader.
          'composer.json': JSON.stringify(
            {
              name: 'svc/php-sample',
              require: { php: '>=8.1' },
              autoload: { 'psr-4': { 'App\\': 'src/' } },
              repositories: [{ 'packagist.org': false }],
            },
            null,
            2,
          ),
          'src/Greeting.php':
            '<?php\nnamespace App;\n\nfinal class Greeting\n{\n    public static function text(): string\n    {\n        return "php sample: " . htmlspecialchars("<ok>") . "\\n";\n    }\n}\n',
          'public/index.php':
            "<?php\nrequire __DIR__ . '/../vendor/autoload.php';\nheader('Content-Type: text/plain');\necho App\\Greeting::text();\n",
        },
        path: '/',
        body: 'php sample: &lt;ok&gt;\n',
        absent: ['composer'],
        absentFiles: [],
        source: 'src/Greeting.php',
      };
    case 'ruby':
      return {
        ...common,
        name,
        stack: 'ruby',
        files: {
          // No gem and no gem source: no gem server is reachable from the test machine.
          Gemfile: '# no gems\n',
          'Gemfile.lock': 'PLATFORMS\n  x86_64-linux\n\nDEPENDENCIES\n\nBUNDLED WITH\n   2.3.15\n',
          'app.rb': RUBY_APP,
        },
        path: '/',
        body: 'ruby sample: ruby\n',
        absent: ['gcc', 'cc', 'make'],
        absentFiles: [],
        source: 'app.rb',
      };
  }
}

/** Writes the sample into dir; the node samples get their package-lock.json from the registry. */
export async function writeSample(s: Sample, dir: string): Promise<void> {
  for (const [rel, text] of Object.entries(s.files)) {
    await mkdir(dirname(join(dir, rel)), { recursive: true });
    await writeFile(join(dir, rel), text);
  }
  if (s.npmLock) {
    await run('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: dir,
      timeout: 180_000,
    });
  }
}
