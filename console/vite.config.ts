import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the service at /console (src/modules/console/routes.ts); `npm run dev -w console`
// proxies the API to a service on localhost:3000.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false },
  server: { proxy: { '/api': 'http://localhost:3000' } },
});
