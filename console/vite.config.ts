import react from '@vitejs/plugin-react';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { defineConfig, type Plugin } from 'vite';

const BASE = '/console/';

/**
 * A first load of a page (e.g. the dashboard) fetches the page's code and its imports (uPlot)
 * beside the entry script, not after the entry has run: index.html gets a few lines that add
 * modulepreload (and stylesheet) links for the page the URL names. The path of each page and the
 * module it loads are read from their one definition, the PAGES list in src/pages/index.ts.
 */
function pagePreload(): Plugin {
  return {
    name: 'console-page-preload',
    transformIndexHtml: {
      order: 'post',
      handler(html, { bundle }) {
        if (!bundle) return html; // dev server: nothing is bundled
        const pages = readFileSync(path.resolve('src/pages/index.ts'), 'utf8');
        const routes = [...pages.matchAll(/page\(\s*'([^']+)',\s*'[^']*',\s*\(\)\s*=>\s*import\('\.\/([^']+)'\)/g)];
        if (routes.length === 0) throw new Error('page-preload: no page(...) found in src/pages/index.ts');
        const chunks = Object.values(bundle).filter((c) => c.type === 'chunk');
        const files = (name: string, out: Set<string>, skip = new Set<string>()) => {
          const c = chunks.find((k) => k.fileName === name);
          if (!c || out.has(name) || skip.has(name)) return out;
          out.add(name);
          for (const css of c.viteMetadata?.importedCss ?? []) out.add(css);
          for (const i of c.imports) files(i, out, skip);
          return out;
        };
        const pageChunk = (mod: string) =>
          chunks.find(
            (c) => c.isDynamicEntry && c.facadeModuleId?.replace(/\.tsx?$/, '') === path.resolve('src/pages', mod),
          );
        const pageFiles = new Set(routes.map(([, , mod]) => pageChunk(mod)?.fileName));
        const entryChunk = chunks.find((c) => c.isEntry)!;
        // What the entry imports, index.html already names; what it imports next, the app
        // (app-root.tsx: React), is always needed: named too, as modulepreload links.
        const entry = files(entryChunk.fileName, new Set());
        const app = new Set<string>();
        for (const name of entryChunk.dynamicImports) if (!pageFiles.has(name)) files(name, app, entry);
        const skip = new Set([...entry, ...app]);
        const map: Record<string, string[]> = {};
        for (const [, route, mod] of routes) {
          const chunk = pageChunk(mod);
          if (chunk) map[route] = [...files(chunk.fileName, new Set(), skip)];
        }
        // The route as src/location.ts reads it: the path under the base, "" being "/".
        const code = `{const b=${JSON.stringify(BASE)},m=${JSON.stringify(map)},p=location.pathname.slice(b.length-1)||'/';
for(const f of m[p]||[]){const l=document.createElement('link');l.rel=f.endsWith('.css')?'stylesheet':'modulepreload';
l.crossOrigin='';l.href=b+f;document.head.appendChild(l)}}`;
        const links = [...app].map((f) =>
          f.endsWith('.css')
            ? `<link rel="stylesheet" crossorigin href="${BASE}${f}">`
            : `<link rel="modulepreload" crossorigin href="${BASE}${f}">`,
        );
        // The script right after the title: before the stylesheet, which a classic script waits for.
        return html
          .replace('</title>', `</title>\n    <script>${code}</script>`)
          .replace('</head>', `  ${links.join('\n    ')}\n  </head>`);
      },
    },
  };
}

// Served by the service at /console (src/modules/console/routes.ts); `npm run dev -w console`
// proxies the API to a service on localhost:3000.
export default defineConfig({
  base: BASE,
  plugins: [react(), pagePreload()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false },
  server: { proxy: { '/api': 'http://localhost:3000' } },
});
