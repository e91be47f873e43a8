// import "./util/format"
/* require("./util/format") */
const s = "import x from './util/format'";
export default s;
