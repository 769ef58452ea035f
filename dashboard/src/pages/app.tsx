// The app page lives in app/, one file per tab; this name stays for the router's import.
export { AppPage } from './app/index';
