// Vite's ?raw imports give a file's text (used to read wrangler.toml in tests).
declare module "*?raw" {
  const text: string;
  export default text;
}
