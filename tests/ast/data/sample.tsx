import React, { useState } from "react";

type Props = { label: string; start?: number };

export function Counter({ label, start = 0 }: Props) {
  const [count, setCount] = useState(start);
  const increment = () => setCount(cou<@arrow>nt + 1);
  return (
    <div className="counter">
      <span>
        {label}: {count}
      </span>
      <button onClick={increment}>+</button>
    </div>
  );
}

export class Panel extends React.Component<Props> {
  render() {
    const title = this.props.label;
    return <section>{ti<@a>tle}</section>;
  }
}
