// The console's files are imported as text (wrangler's Text module rule; see wrangler.toml [[rules]]).
declare module "*.html" {
  const text: string;
  export default text;
}
declare module "*/console/app.js" {
  const text: string;
  export default text;
}
