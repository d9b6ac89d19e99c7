import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Relative asset URLs: the built app works from any path (the demo's static server, a test's).
// `npm run dev` serves it on :5173; the service must list that origin in CORS_ORIGINS.
export default defineConfig({
  base: './',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true },
  server: { port: 5173 },
});
