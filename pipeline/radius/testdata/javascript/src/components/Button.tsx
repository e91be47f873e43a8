import { format } from "@app/util";
const re = /\/\*/g;
const t = `a ${format(1)} b`;
export const Button = () => <p>Don't {t}</p>;
