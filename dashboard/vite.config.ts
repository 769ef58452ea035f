// The dashboard's own build: output to dist/dashboard, which the control plane serves. Every
// emitted script is a file (no inline bootstrap, no preload polyfill) so the page runs under a
// CSP of `script-src 'self'`.
import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  plugins: [preact({ devToolsInProd: false, prefreshEnabled: false })],
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
});
