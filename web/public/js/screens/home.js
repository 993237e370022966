import { h, fill } from "../dom.js";

export function home(root) {
  fill(root, h("h1", {}, "Foursquare Race"));
}
