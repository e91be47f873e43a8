export const load = () => import("./util/format.js");
