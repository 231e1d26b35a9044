import { defineConfig } from 'vite';

// The console is served by the gateway at /console/: index.html for the app's own paths, and the
// hashed files of dist/assets with a long cache (gateway/console-static.ts).
export default defineConfig({
  base: '/console/',
  // Preact's automatic JSX runtime; no plugin needed for a production build.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // The gateway's Content-Security-Policy allows scripts and styles from itself only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
    reportCompressedSize: false,
  },
  server: {
    // `npx vite console` beside `npm start`: the API calls go to the gateway.
    proxy: {
      '/console/v1': 'http://localhost:8080',
      '/v1': 'http://localhost:8080',
    },
  },
});
