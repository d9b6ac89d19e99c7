import { startFirstLoad } from './first-load';
import './styles.css';

// The entry is small and has no React: what the first page needs starts now, while React and the
// app (app-root.tsx, preloaded by index.html) load and run.
startFirstLoad();
void import('./app-root');
